"""python -m regions.tour: the whole stack in one run, and it says so."""
import re

from regions import tour


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
    assert f"regions-server --data {tmp_path / 'tour' / 'ots'}" in out
    assert (tmp_path / "tour" / "ots").is_dir()
