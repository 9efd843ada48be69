"""The command line every experiment shares: ``--seed``, ``--count``, ``--seconds``, ``--dir``."""
import argparse


def main(name: str, doc: str, run, argv=None, count_help: str = "cycles (default: all of them)") -> int:
    """Parse ``argv``, call ``run(seed, count, seconds, dir)``, print its summary line
    and the first failures; 0 iff the run is ok."""
    ap = argparse.ArgumentParser(prog=f"python -m regions.soak {name}", description=doc.splitlines()[0])
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--count", type=int, default=None, help=count_help)
    ap.add_argument("--seconds", type=float, default=None, help="stop starting new cycles after this")
    ap.add_argument("--dir", default=None, help="where scratch directories go (default /dev/shm)")
    args = ap.parse_args(argv)
    s = run(args.seed, args.count, args.seconds, args.dir)
    print(s.line())
    for d in s.details:
        print("  " + d)
    return 0 if s.ok else 1
