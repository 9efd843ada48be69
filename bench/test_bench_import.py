"""regions-import's rows/s: embedded, and against a regions-server, by workers.

One generated CSV (``BENCH_IMPORT_ROWS`` rows, default 20,000: an INTEGER and
a STRING primary key, four attributes, ~120 bytes a row) is imported with the
import tool's defaults (shuffled, 200-row batches) and 1, 2 and 4 worker
threads into

- ``embedded``: a fresh ``regions.tablestore.OTSClient`` store per run, in
  this process;
- ``server``: a fresh table per run on a ``regions-server`` subprocess,
  through the official SDK (its protobuf and PlainBuffer coding on both
  sides, the server in its own process with its own GIL).

The figure is rows written / the import's wall time (reading and typing the
CSV, the shuffle, the writes).  Bounded: one import per case.

    pytest bench/test_bench_import.py --benchmark-only -s
    python bench/test_bench_import.py [repeats]     # interleaved runs, medians
"""
import logging
import os
import random
import sys
import tempfile

import pytest

from regions.transfer import EmbeddedTarget, EndpointTarget, ImportOptions, import_file
from test_bench_otsserver import INSTANCE, KEY_ID, SECRET, _start_server

ROWS = int(os.environ.get("BENCH_IMPORT_ROWS", 20_000))
WORKERS = (1, 2, 4)
PRIMARY_KEY = [("uid", "INTEGER"), ("oid", "STRING")]


def make_csv(path, rows=ROWS):
    rng = random.Random(7)
    with open(path, "w") as f:
        f.write("uid,oid,price,qty,item,paid\n")
        for i in range(rows):
            f.write(f"{rng.randrange(1 << 40)},o{i:08d},{rng.uniform(1, 500):.2f},"
                    f"{rng.randrange(1, 20)},item number {rng.randrange(10**6):06d} "
                    f"{'x' * rng.randrange(20, 60)},{'true' if i % 3 else 'false'}\n")
    return path


class Setup:
    """The CSV, and the server (started on first use)."""

    def __init__(self, tmp):
        self.tmp, self.csv = tmp, make_csv(os.path.join(tmp, "rows.csv"))
        self.proc = self.endpoint = None
        self.runs = 0

    def target(self, kind):
        self.runs += 1
        if kind == "embedded":
            return EmbeddedTarget(os.path.join(self.tmp, f"store{self.runs}"))
        if self.proc is None:
            self.proc, self.endpoint = _start_server(os.path.join(self.tmp, "server"), "--no-console")
        return EndpointTarget(self.endpoint, INSTANCE, KEY_ID, SECRET)

    def run(self, kind, workers):
        target = self.target(kind)
        table = f"t{self.runs}"
        try:
            target.create_table(table, PRIMARY_KEY)
            result = import_file(self.csv, target, ImportOptions(
                table, workers=workers, progress=False, seed=1,
                rejects=os.path.join(self.tmp, "rejects.jsonl")))
            if kind == "server":
                target.client.delete_table(table)
        finally:
            target.close()
        assert (result.rows_written, result.rejected) == (ROWS, 0)
        return {"rows": ROWS, "workers": workers, "seconds": round(result.seconds, 2),
                "rows_per_s": round(ROWS / result.seconds)}

    def close(self):
        if self.proc is not None:
            self.proc.terminate()
            self.proc.wait(30)


@pytest.fixture(scope="module")
def setup():
    logging.getLogger("tablestore").addHandler(logging.NullHandler())
    with tempfile.TemporaryDirectory() as tmp:
        s = Setup(tmp)
        yield s
        s.close()


@pytest.mark.parametrize("workers", WORKERS)
@pytest.mark.parametrize("kind", ["embedded", "server"])
def test_import_rows_per_second(benchmark, setup, kind, workers):
    result = {}
    benchmark.pedantic(lambda: result.update(setup.run(kind, workers)), rounds=1, iterations=1)
    benchmark.extra_info.update(result)
    print(f"\nimport {kind} {workers} workers: {result}")


def compare(repeats=3):
    """Interleaved runs of every case, ``repeats`` times; median rows/s."""
    import statistics
    logging.getLogger("tablestore").addHandler(logging.NullHandler())
    with tempfile.TemporaryDirectory() as tmp:
        s = Setup(tmp)
        try:
            runs = {(k, w): [] for k in ("embedded", "server") for w in WORKERS}
            for _ in range(repeats):
                for kind, workers in runs:
                    runs[kind, workers].append(s.run(kind, workers)["rows_per_s"])
            for (kind, workers), rates in runs.items():
                print(f"{kind:<9} {workers} workers: median {statistics.median(rates):>7,.0f} "
                      f"rows/s  runs {rates}", flush=True)
        finally:
            s.close()


if __name__ == "__main__":
    compare(int(sys.argv[1]) if len(sys.argv) > 1 else 3)
