"""Draw bench/test_bench_warm.py's timelines: the read rate of each second
after a load, a reopen or a split, ours beside sqlite3, with ours' steady
rate and the goal's 0.8 of it (issue 34, part 1).

    BENCH_WARM_JSON=/tmp/warm.jsonl python -m pytest bench/test_bench_warm.py --benchmark-only -s
    python bench/plot_warm.py /tmp/warm.jsonl docs/images/reads-after-load.png

One panel a test (its phase and load order), in the order the JSON lines
come; a test run more than once keeps its last line.  Needs matplotlib (the
``plot`` extra).
"""
import json
import sys

FIRST = 30          # the goal's window, in seconds (test_bench_warm.FIRST)
GOAL = 0.8          # of ours' steady rate


def load(path):
    """``{(phase, order): info}`` of the JSON lines in ``path``, last line winning."""
    runs = {}
    with open(path) as f:
        for line in f:
            if line.strip():
                info = json.loads(line)
                runs[info["phase"], info["order"]] = info
    return runs


def draw(runs, out):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    cols = 2
    rows = (len(runs) + cols - 1) // cols
    fig, axes = plt.subplots(rows, cols, figsize=(6 * cols, 3.2 * rows), squeeze=False, sharey=True)
    for ax, ((phase, order), info) in zip(axes.flat, runs.items()):
        steady = info["steady"]["ours"]
        for name, rates in info["per_second"].items():
            label = name
            ax.plot(range(1, len(rates) + 1), [r / 1000 for r in rates], label=label,
                    linewidth=1.5 if name == "ours" else 1.0)
        ax.axhline(steady / 1000, color="C0", linestyle="--", linewidth=0.8, label="ours, steady")
        ax.axhline(GOAL * steady / 1000, color="C3", linestyle=":", linewidth=0.8,
                   label=f"{GOAL} x ours' steady")
        ax.axvline(FIRST, color="grey", linewidth=0.5)
        ax.set_title(f"after a {phase}, {order} ids: first {FIRST} s / steady "
                     f"{info['first30_over_steady']:.2f}", fontsize=9)
        ax.set_xlabel("seconds after the load" if phase == "load" else f"seconds after the {phase}",
                      fontsize=8)
        ax.set_ylabel("get_row, thousands/s", fontsize=8)
        ax.tick_params(labelsize=7)
        ax.set_ylim(bottom=0)
    for ax in list(axes.flat)[len(runs):]:
        ax.set_visible(False)
    axes.flat[0].legend(fontsize=7, loc="lower right")
    rows_n = next(iter(runs.values()))["rows"]
    fig.suptitle(f"Reads each second after loading {rows_n:,} rows (bench/test_bench_warm.py)", fontsize=10)
    fig.tight_layout()
    fig.savefig(out, dpi=110)


def main(argv):
    if len(argv) != 3:
        sys.exit("usage: python bench/plot_warm.py RUNS.jsonl OUT.png")
    runs = load(argv[1])
    if not runs:
        sys.exit(f"{argv[1]}: no runs")
    draw(runs, argv[2])
    print(f"{argv[2]}: {len(runs)} panels")


if __name__ == "__main__":
    main(sys.argv)
