"""Reliability experiments: loops that try thousands of faults and count losses.

One module per experiment, each with ``main(argv) -> int`` and a
``run(seed=..., count=..., seconds=...) -> Summary`` that tests call at a small
count.  ``python -m regions.soak EXPERIMENT [--seed N] [--count N]
[--seconds S]`` runs one and prints its summary line; docs/reliability.md
records the long runs and the commands that reproduce them.

Experiments (docs/reliability.md has the figures):

==============  ==============================================================
killloop        kill -9 of a child writing through the Tablestore API, reopen, verify
wire            SIGKILL/SIGTERM of regions-server under official-SDK writers
powerloss       unsynced bytes and directory entries dropped (sync=True), reopen, verify
ioerrors        file operation i fails (EIO, ENOSPC, fsync) for every i of a scenario
corruption      a byte flipped at every offset of tables, MANIFEST, CURRENT, meta, WAL
concurrency     8 threads of rows and scans while auto-splits run
fuzz            malformed input on the embedded API, the wire and the file parsers
hostile         slow, forged, idle, garbage and over-cap connections beside SDK writers
diskfull        the disk fills and empties under writers and splits; writes resume by themselves
descriptors     file descriptors run out and come back (a child's RLIMIT_NOFILE lowered)
==============  ==============================================================
"""
import dataclasses

EXPERIMENTS = ("killloop", "wire", "powerloss", "ioerrors", "corruption", "concurrency", "fuzz",
               "hostile", "diskfull", "descriptors")


@dataclasses.dataclass
class Summary:
    """What one run tried and what it found; the columns of docs/reliability.md.

    ``faults`` says what was injected; ``cycles`` how many times; ``verified``
    the acknowledged operations (or inputs) checked afterwards.  ``losses``
    (acknowledged writes missing), ``wrong`` (wrong results), ``crashes``
    (unexpected exceptions or 5xx) and ``hangs`` are the counts the contract
    promises to be zero.  ``details`` holds the first few failures, readable.
    """

    experiment: str
    seed: int
    faults: str
    cycles: int = 0
    verified: int = 0
    losses: int = 0
    wrong: int = 0
    crashes: int = 0
    hangs: int = 0
    seconds: float = 0.0
    details: list = dataclasses.field(default_factory=list)
    #: what an experiment measured besides (e.g. diskfull's resume times), or None
    figures: dict = None

    @property
    def ok(self) -> bool:
        return not (self.losses or self.wrong or self.crashes or self.hangs)

    def failure(self, kind: str, text: str) -> None:
        """Count one failure of ``kind`` (losses, wrong, crashes, hangs), keeping its text."""
        setattr(self, kind, getattr(self, kind) + 1)
        if len(self.details) < 20:
            self.details.append(f"{kind}: {text}")

    def line(self) -> str:
        return (f"{self.experiment} seed={self.seed} faults={self.faults} cycles={self.cycles} "
                f"verified={self.verified} losses={self.losses} wrong={self.wrong} "
                f"crashes={self.crashes} hangs={self.hangs} seconds={self.seconds:.1f} "
                f"{'OK' if self.ok else 'FAILED'}")
