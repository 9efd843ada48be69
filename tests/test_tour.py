"""python -m regions.tour: the whole stack in one run, and it says so; the
console command it prints at the end works."""
import json
import os
import re
import shlex
import urllib.request

from regions import tour
from test_setup_entrypoints import command, serving


def console_commands(out):
    return [shlex.split(line[2:]) for line in out.splitlines()
            if line.startswith("$ regions-server ")]


def test_the_tour_plans_creates_imports_splits_reads_and_points_at_the_console(tmp_path, capsys):
    assert tour.main(["--data", str(tmp_path / "tour")]) == 0
    out = capsys.readouterr().out
    assert "# hash prefix (md5, 4 hex digits): split points 2000, 4000, 6000, 8000" in out
    assert "created 'purchases' with 8 regions" in out
    assert "rows written: 30000" in out and "capacity units consumed: write 30000" in out
    assert "rows rejected: 0" in out
    regions = int(re.search(r"(\d+) regions \(8 pre-split, (\d+) made by auto-splits\)",
                            out).group(1))
    assert regions > 8
    pages = re.findall(r"call \d+: +(\d+) rows, (\d+) read CU", out)
    assert len(pages) >= 2 and all(int(cu) >= 1 for _, cu in pages)
    total = int(re.search(r"(\d+) rows in (\d+) calls", out).group(1))
    assert total == sum(int(n) for n, _ in pages) > 500

    # The command it prints serves the store it made: the table, its regions.
    [argv] = console_commands(out)
    assert argv == ["regions-server", "--data", str(tmp_path / "tour" / "ots"), "--port", "8800"]
    with serving(command(*argv[:-1], "0"), tmp_path) as (endpoint, _):
        with urllib.request.urlopen(endpoint + "/?format=json", timeout=30) as answer:
            tables = {t["name"]: t for t in json.load(answer)["tables"]}
    assert tables["purchases"]["regions"] == regions


def test_without_data_it_names_no_deleted_directory_and_says_how_to_keep_one(tmp_path, capsys):
    assert tour.main(["--rows", "1000"]) == 0
    out = capsys.readouterr().out
    used = re.search(r"purchase table in (\S+)", out).group(1)
    assert not os.path.exists(used)  # a temporary directory, gone
    assert used not in out.split("== 6. the console")[1]
    assert "$ python -m regions.tour --data DIR\n" in out
    assert console_commands(out) == [["regions-server", "--data", os.path.join("DIR", "ots"),
                                      "--port", "8800"]]
