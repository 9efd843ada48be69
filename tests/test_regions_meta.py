"""Meta: atomic, validated persistence of the catalogue."""
import pytest

import lsm.fs
from regions.errors import MetaCorruptionError
from regions.meta import Meta, MetaDoc, RegionRecord, check_layout


def _table(*bounds):
    return [RegionRecord(i + 1, bounds[i], bounds[i + 1]) for i in range(len(bounds) - 1)]


def test_check_layout_accepts_a_cover_and_names_gaps_and_overlaps():
    check_layout("t", _table(b"", b"m", b""))
    check_layout("t", _table(b"", b""))
    with pytest.raises(ValueError, match="gap or overlap"):
        check_layout("t", [RegionRecord(1, b"", b"m"), RegionRecord(2, b"n", b"")])
    with pytest.raises(ValueError, match="first region"):
        check_layout("t", _table(b"a", b""))
    with pytest.raises(ValueError, match="last region"):
        check_layout("t", _table(b"", b"z"))
    with pytest.raises(ValueError, match="empty region"):
        check_layout("t", _table(b"", b"m", b"m", b""))


def test_meta_round_trips_and_counts_epochs(tmp_path):
    fs = lsm.fs.OSFileSystem()
    m = Meta.open(fs, str(tmp_path))
    assert m.doc.tables == {} and m.doc.epoch == 0

    def create(doc):
        doc.tables["t"] = {"attributes": {"schema": [1, "x"]}, "regions": _table(b"", b"\x00\xff", b"")}
        doc.next_region_id = 3
        doc.procedures.append({"kind": "split", "table": "t", "parent": 2, "split_key": b"\xfe",
                               "daughters": [3, 4], "step": "prepared"})
        doc.next_region_id = 5
    m.update(create)
    m2 = Meta.open(fs, str(tmp_path))
    assert m2.doc.epoch == 1 and m2.doc.next_region_id == 5
    assert [(r.id, r.start, r.end) for r in m2.doc.tables["t"]["regions"]] == [
        (1, b"", b"\x00\xff"), (2, b"\x00\xff", b"")]
    assert m2.doc.tables["t"]["attributes"] == {"schema": [1, "x"]}
    assert m2.doc.procedures[0]["split_key"] == b"\xfe"
    assert m2.doc.region_ids() == {1, 2, 3, 4}


def test_a_failed_update_changes_neither_file_nor_memory(tmp_path):
    fs = lsm.fs.OSFileSystem()
    m = Meta.open(fs, str(tmp_path))
    m.update(lambda doc: doc.tables.__setitem__("t", {"attributes": {}, "regions": _table(b"", b"")}))
    before = (tmp_path / "META").read_bytes()

    def bad(doc):
        doc.tables["u"] = {"attributes": {}, "regions": []}
        raise RuntimeError("boom")
    with pytest.raises(RuntimeError):
        m.update(bad)
    assert "u" not in m.doc.tables and (tmp_path / "META").read_bytes() == before


@pytest.mark.parametrize("data", [
    b"not json", b'{"format": 2}', b'{"format": 1, "epoch": 0}',
    b'{"format": 1, "epoch": 0, "next_region_id": 2, "parents": [], "procedures": [], '
    b'"tables": {"t": {"attributes": {}, "regions": [{"id": 1, "start": "61", "end": "", "state": "OPEN"}]}}}',
    b'{"format": 1, "epoch": 0, "next_region_id": 1, "parents": [], "procedures": [], '
    b'"tables": {"t": {"attributes": {}, "regions": [{"id": 1, "start": "", "end": "", "state": "OPEN"}]}}}',
])
def test_corrupt_meta_is_refused(data):
    with pytest.raises(MetaCorruptionError):
        MetaDoc.from_bytes(data)
