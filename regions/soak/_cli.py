"""The command line every experiment shares: ``--seed``, ``--count``, ``--seconds``, ``--dir``."""
from regions import cliutil


def parser(name: str, count_help: str, seconds_help: str = "stop starting new cycles after this",
           seed: int = 0, doc: str = "", work_dir: bool = False):
    """The experiment's parser; ``work_dir``: --dir is the run's own directory
    (made if missing), else where scratch directories go (it must exist).
    A bad value (a negative seed, a count or a duration that is not
    positive, a --dir that cannot be one) is one line on stderr, exit 2."""
    ap = cliutil.Parser(prog=f"python -m regions.soak {name}",
                        description=doc.splitlines()[0] if doc else None)
    ap.add_argument("--seed", type=cliutil.non_negative_int, default=seed,
                    help=f"seed of the run's random choices ({seed})")
    ap.add_argument("--count", type=cliutil.positive_int, default=None, help=count_help)
    ap.add_argument("--seconds", type=cliutil.positive_float, default=None, help=seconds_help)
    if work_dir:
        ap.add_argument("--dir", type=cliutil.store_dir, default=None,
                        help="work directory, made if missing (default: a temporary one)")
    else:
        ap.add_argument("--dir", type=cliutil.existing_dir, default=None,
                        help="where scratch directories go (default /dev/shm)")
    return ap


def main(name: str, doc: str, run, argv=None, count_help: str = "cycles (default: all of them)",
         figures=None) -> int:
    """Parse ``argv``, call ``run(seed, count, seconds, dir)``, print its summary line,
    ``figures(summary)`` if given, and the first failures; 0 iff the run is ok."""
    args = parser(name, count_help, doc=doc).parse_args(argv)
    s = run(args.seed, args.count, args.seconds, args.dir)
    print(s.line())
    if figures is not None:
        print(figures(s))
    for d in s.details:
        print("  " + d)
    return 0 if s.ok else 1
