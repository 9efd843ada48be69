"""``python -m regions.soak EXPERIMENT [options]``: run one experiment (see regions/soak/__init__.py)."""
import importlib
import sys

from regions import cliutil

from . import EXPERIMENTS, __doc__ as DOC


def main(argv=None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    ap = cliutil.Parser(prog="python -m regions.soak", description=DOC.splitlines()[0],
                        usage="%(prog)s [-h] EXPERIMENT [--seed N] [--count N] [--seconds S] "
                              "[--dir DIR]",
                        epilog="%(prog)s EXPERIMENT --help: the experiment's options")
    ap.add_argument("experiment", choices=EXPERIMENTS, metavar="EXPERIMENT",
                    help="one of " + ", ".join(EXPERIMENTS))
    if argv and argv[0].startswith("-") and argv[0] not in ("-h", "--help"):
        ap.error(f"the experiment comes first, then {argv[0]}: EXPERIMENT is one of "
                 + ", ".join(EXPERIMENTS))
    experiment = ap.parse_args(argv[:1]).experiment   # the rest is the experiment's
    return importlib.import_module(f"regions.soak.{experiment}").main(argv[1:])


if __name__ == "__main__":
    sys.exit(main())
