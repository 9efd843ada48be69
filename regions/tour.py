"""A tour of the whole stack: ``python -m regions.tour [--data DIR] [--rows N]``.

The Tablestore guide's student-card purchase table, end to end on the
embedded store: plan split points with the planner (a hash prefix on the
order number, as the guide advises for a key that only grows), create the
table pre-split, import a generated term of purchases with the import tool
(its progress bar on a terminal), watch the regions split as they grow
(small split thresholds, so that a few MB are enough), read a key range page
by page with the capacity units of each call, and say where the console
shows it all.  Runs in a temporary directory unless ``--data`` keeps it.
Every step prints what it did; the whole takes well under a minute.
"""

from __future__ import annotations

import argparse
import csv
import os
import random
import sys
import tempfile
import time

import regions
from regions import keys
from regions.presplit import HashPrefixSplit, bar_chart, evaluate, render_table
from regions.presplit.evaluator import show
from regions.tablestore import INF_MAX, INF_MIN, Direction, OTSClient
from regions.transfer import EmbeddedTarget, ImportOptions, import_file

TABLE = "purchases"
PRIMARY_KEY = [("HashOrderNumber", "STRING"), ("DeviceID", "STRING")]
REGIONS = 8
WIDTH = 4  # hex digits of md5 in front of the order number (keys.hash_prefix)

#: Small regions so that a tour-sized load splits: memtables flush at 64 KiB,
#: a region splits above 256 KiB of table files (the defaults are 8 MiB and
#: the stepping policy up to 512 MiB).
TOUR_OPTIONS = dict(memtable_bytes=64 << 10, split_policy="constant",
                    max_region_bytes=256 << 10, split_jitter=0.0, maintenance_interval=0.02)


def say(text=""):
    print(text, flush=True)


def step(n, title):
    say(f"\n== {n}. {title}")


def purchases(count: int, seed: int = 2017):
    """The guide's campus: 3,000 cards, 12 shops (the canteen busiest), busy
    shops with more tills; each till numbers its purchases 1, 2, 3, ..."""
    rng = random.Random(seed)
    cards = [f"C{rng.randrange(10**7):07d}" for _ in range(3000)]
    sellers = [f"S{i:02d}" for i in range(12)]
    weights = [1 / (i + 1) for i in range(len(sellers))]
    devices = {s: [f"{s}D{j:02d}" for j in range(max(1, round(12 / (i + 1))))]
               for i, s in enumerate(sellers)}
    counter = dict.fromkeys((d for ds in devices.values() for d in ds), 0)
    t = 1_700_000_000_000
    for _ in range(count):
        seller = rng.choices(sellers, weights)[0]
        device = rng.choice(devices[seller])
        counter[device] += 1
        t += rng.randrange(1, 2000)
        yield {"HashOrderNumber": keys.hash_prefix(counter[device], WIDTH), "DeviceID": device,
               "OrderNumber": counter[device], "CardID": rng.choice(cards), "SellerID": seller,
               "Amount": round(rng.uniform(1, 60), 2), "Time": t}


def plan(rows, data):
    step(1, f"plan {REGIONS} regions with the planner (regions-presplit)")
    algorithm = HashPrefixSplit(WIDTH)
    points = algorithm.split(REGIONS)
    sample = os.path.join(data, "hashorder.txt")
    with open(sample, "w", encoding="utf-8") as f:
        f.writelines(r["HashOrderNumber"] + "\n" for r in rows)
    say(f"$ regions-presplit hash-prefix --width {WIDTH} -n {REGIONS} --evaluate file "
        f"--key-file {sample}")
    say(f"# {algorithm.describe()}: split points {', '.join(points)}")
    report = evaluate(points, [r["HashOrderNumber"] for r in rows])
    say(render_table(report))
    say(bar_chart(report, width=40))
    return points


def write_csv(rows, path):
    with open(path, "w", newline="", encoding="utf-8") as f:
        w = csv.DictWriter(f, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)


def wait_for_splits(client, settle=1.0, limit=20.0):
    """Until the table's region count has not changed for ``settle`` seconds."""
    deadline, last, since = time.monotonic() + limit, None, time.monotonic()
    while time.monotonic() < deadline:
        n = len(client.describe_table(TABLE).shard_splits)
        if n != last:
            last, since = n, time.monotonic()
        elif time.monotonic() - since >= settle:
            break
        time.sleep(0.1)


def show_regions(client):
    regions_now = client.metrics()["server"]["tables"][TABLE]
    bounds = [None] + client.describe_table(TABLE).shard_splits + [None]
    say(f"{len(regions_now)} regions ({REGIONS} pre-split, "
        f"{len(regions_now) - REGIONS} made by auto-splits):")
    say(f"{'region':>6}  {'start':<12}  {'end':<12}  {'rows':>7}  {'bytes':>9}")
    for i, r in enumerate(regions_now):
        size = r["size_bytes"] + r["memtable_bytes"]
        say(f"{i:>6}  {show(bounds[i]):<12}  {show(bounds[i + 1]):<12}  "
            f"{r['key_count']:>7}  {size:>9,}")


def read_pages(client, start, end, page_rows):
    say(f"get_range from HashOrderNumber {start!r} to {end!r}, limit {page_rows} per call:")
    lo = [("HashOrderNumber", start), ("DeviceID", INF_MIN)]
    hi = [("HashOrderNumber", end), ("DeviceID", INF_MAX)]
    call, total = 0, 0
    while lo is not None:
        call += 1
        consumed, lo, rows, _ = client.get_range(TABLE, Direction.FORWARD, lo, hi,
                                                 limit=page_rows)
        total += len(rows)
        nxt = "end of range" if lo is None else f"next start {lo[0][1]!r}, {lo[1][1]!r}"
        say(f"  call {call}: {len(rows):>3} rows, {consumed.read} read CU, {nxt}")
    say(f"{total} rows in {call} calls")


def run(data: str, count: int, kept: bool = True) -> None:
    """The tour in ``data``; ``kept``: the directory outlives the run (--data),
    else it is a temporary one, deleted when the tour ends."""
    started = time.monotonic()
    rows = list(purchases(count))
    say(f"lsm-regions tour: the Tablestore guide's student-card purchase table in {data}")
    say(f"{count:,} purchases of one term: primary key HashOrderNumber (md5 prefix + order "
        f"number), DeviceID; attributes OrderNumber, CardID, SellerID, Amount, Time")
    points = plan(rows, data)
    source = os.path.join(data, "purchases.csv")
    write_csv(rows, source)
    options = regions.ServerOptions(**TOUR_OPTIONS)
    with OTSClient(os.path.join(data, "ots"), server_options=options) as client:
        target = EmbeddedTarget(client=client)
        step(2, f"create the table pre-split on those {len(points)} points")
        target.create_table(TABLE, PRIMARY_KEY, points)
        say(f"created {TABLE!r} with {len(client.describe_table(TABLE).shard_splits) + 1} regions")
        step(3, "import the purchases with the import tool (shuffled, 4 workers)")
        say(f"$ regions-import --data {os.path.join(data, 'ots')} --table {TABLE} "
            f"--columns OrderNumber:INTEGER,Amount:DOUBLE,Time:INTEGER --workers 4 {source}")
        result = import_file(source, target, ImportOptions(
            TABLE, columns={"OrderNumber": "INTEGER", "Amount": "DOUBLE", "Time": "INTEGER"},
            workers=4, seed=1))
        say(result.summary())
        step(4, "the regions after the auto-splits")
        wait_for_splits(client)
        show_regions(client)
        step(5, "read a key range page by page, with the capacity units of each call")
        read_pages(client, "8000", "9000", 500)
        first = [(name, rows[0][name]) for name, _ in PRIMARY_KEY]
        consumed, row, _ = client.get_row(TABLE, first)
        say(f"get_row of the first purchase {dict(first)}: {consumed.read} read CU, "
            f"{len(row.attribute_columns)} attribute columns")
    step(6, "the console")
    console(data, kept)
    say(f"\ntour done in {time.monotonic() - started:.1f} s")


def console(data, kept):
    """How to see this tour's store in the console: the server on it, or, when
    it is in a temporary directory (gone at the end), the tour again with
    --data first."""
    if kept:
        say(f"$ regions-server --data {os.path.join(os.path.abspath(data), 'ots')} --port 8800")
    else:
        say("this store is in a temporary directory, deleted when the tour ends; "
            "to keep it for the console, run the tour with --data DIR:")
        say("$ python -m regions.tour --data DIR")
        say(f"$ regions-server --data {os.path.join('DIR', 'ots')} --port 8800")
    say("then open http://127.0.0.1:8800/ : the table's regions with their key ranges, sizes, "
        "read/write rates and split history, a row browser, and /metrics for Prometheus")


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python -m regions.tour", description=__doc__.split("\n")[0])
    p.add_argument("--data", help="keep the store here (default: a temporary directory)")
    p.add_argument("--rows", type=int, default=30_000, help="purchases to generate (30000)")
    args = p.parse_args(argv)
    if args.rows < 1000:
        p.error("--rows must be at least 1000")
    if args.data:
        os.makedirs(args.data, exist_ok=True)
        if os.path.exists(os.path.join(args.data, "ots")):
            p.error(f"{args.data} already holds a tour; give an empty directory")
        run(args.data, args.rows)
    else:
        with tempfile.TemporaryDirectory(prefix="regions-tour-") as data:
            run(data, args.rows, kept=False)
    return 0


if __name__ == "__main__":
    sys.exit(main())
