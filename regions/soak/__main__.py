"""``python -m regions.soak EXPERIMENT [options]``: run one experiment (see regions/soak/__init__.py)."""
import importlib
import sys

from . import EXPERIMENTS


def main(argv=None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if not argv or argv[0] not in EXPERIMENTS:
        print(f"usage: python -m regions.soak {{{','.join(EXPERIMENTS)}}} [--seed N] [--count N] [--seconds S]",
              file=sys.stderr)
        return 2
    module = importlib.import_module(f"regions.soak.{argv[0]}")
    return module.main(argv[1:])


if __name__ == "__main__":
    sys.exit(main())
