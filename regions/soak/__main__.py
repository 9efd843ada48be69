"""``python -m regions.soak EXPERIMENT [options]``: run one experiment (see regions/soak/__init__.py)."""
import importlib
import sys

from regions import cliutil
from regions.extras import guard
from regions.otsserver import sdk

from . import EXPERIMENTS, __doc__ as DOC

PROG = "python -m regions.soak"
#: The experiments that drive the official SDK (the server extra): without it
#: they stop before they start, not after minutes of work or at a server that
#: cannot start.
NEED_SDK = ("wire", "corruption", "fuzz", "hostile")


def main(argv=None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    ap = cliutil.Parser(prog=PROG, description=DOC.splitlines()[0],
                        usage="%(prog)s [-h] EXPERIMENT [--seed N] [--count N] [--seconds S] "
                              "[--dir DIR]",
                        epilog="%(prog)s EXPERIMENT --help: the experiment's options")
    ap.add_argument("experiment", choices=EXPERIMENTS, metavar="EXPERIMENT",
                    help="one of " + ", ".join(EXPERIMENTS))
    if argv and argv[0].startswith("-") and argv[0] not in ("-h", "--help"):
        ap.error(f"the experiment comes first, then {argv[0]}: EXPERIMENT is one of "
                 + ", ".join(EXPERIMENTS))
    experiment = ap.parse_args(argv[:1]).experiment   # the rest is the experiment's
    return guard(PROG, f"the {experiment} experiment")(_run)(experiment, argv[1:])


def _run(experiment: str, argv: list) -> int:
    if experiment in NEED_SDK and not {"-h", "--help"} & set(argv):
        sdk.load(f"the {experiment} experiment")
    return importlib.import_module(f"regions.soak.{experiment}").main(argv)


if __name__ == "__main__":
    sys.exit(main())
