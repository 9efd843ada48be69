"""Meta: atomic, validated persistence of the catalogue, and the split
history it keeps."""
import json
import time

import pytest

import lsm.fs
import regions.meta as meta_module
from regions.errors import MetaCorruptionError
from regions.meta import FORMAT, Meta, MetaDoc, RegionRecord, check_layout


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


# -- the split history ---------------------------------------------------------------
def _server(path):
    import regions
    return regions.RegionServer.open(str(path), regions.ServerOptions(
        memtable_bytes=4096, background_workers=0, split_policy=regions.DisabledSplitPolicy()))


def _loaded(path, n=400):
    s = _server(path)
    s.create_table("t")
    for i in range(n):
        s.put("t", b"k%04d" % i, b"v" * 20)
    return s


def test_a_split_is_recorded_by_its_meta_write_and_survives_a_restart(tmp_path):
    s = _loaded(tmp_path)
    try:
        epoch = s._meta.doc.epoch
        (r,) = s.regions("t")
        a, b = s.split_region("t", r.region_id, b"k0200")
        # three meta writes, as before the history: prepare, the point of no return, finish
        assert s._meta.doc.epoch == epoch + 3
        before = s.metrics()["splits"]["recent"]
    finally:
        s.close()
    (entry,) = before
    assert entry["table"] == "t" and entry["parent"] == r.region_id
    assert entry["daughters"] == [a.region_id, b.region_id] and entry["split_key"] == b"k0200"
    assert 0 < entry["duration_seconds"] < 60 and abs(entry["time"] - time.time()) < 60
    doc = json.loads((tmp_path / "META").read_bytes())
    assert doc["format"] == FORMAT == 3
    assert doc["tables"]["t"]["splits"] == [dict(
        {k: v for k, v in entry.items() if k != "table"}, split_key=b"k0200".hex())]
    with _server(tmp_path) as s:
        m = s.metrics()
        assert m["splits"]["recent"] == before and m["splits"]["finished"] == 0


def test_the_history_keeps_the_last_splits_of_each_table(tmp_path, monkeypatch):
    monkeypatch.setattr(meta_module, "SPLIT_HISTORY", 3)
    with _loaded(tmp_path) as s:
        s.create_table("u")
        keys = []
        for i in range(5):
            first = s.regions("t")[0]
            keys.append(b"k%04d" % (390 - 40 * i))
            s.split_region("t", first.region_id, keys[-1])
        s.split_region("u", s.regions("u")[0].region_id, b"m")
        recent = s.metrics()["splits"]["recent"]
        assert [x["split_key"] for x in recent if x["table"] == "t"] == keys[:1:-1]
        assert [x["split_key"] for x in recent if x["table"] == "u"] == [b"m"]
        times = [x["time"] for x in recent]
        assert times == sorted(times, reverse=True)
        s.delete_table("t")            # its history goes with it
        s.create_table("t")
        assert [x["table"] for x in s.metrics()["splits"]["recent"]] == ["u"]


def test_a_rolled_back_split_leaves_no_history_and_one_past_the_point_of_no_return_does(
        tmp_path):
    from regions import procedure

    def fail_at(point):
        def hook(name):
            if name == point:
                raise RuntimeError("injected at " + name)
        return procedure.kill_hook(hook)

    with _loaded(tmp_path) as s:
        (r,) = s.regions("t")
        with fail_at("split.before_meta"), pytest.raises(RuntimeError):
            s.split_region("t", r.region_id, b"k0100")
        assert s.metrics()["splits"]["recent"] == []
        with fail_at("split.after_meta"), pytest.raises(RuntimeError):
            s.split_region("t", r.region_id, b"k0200")
        (entry,) = s.metrics()["splits"]["recent"]
        assert entry["split_key"] == b"k0200" and entry["parent"] == r.region_id
    with _server(tmp_path) as s:
        assert [x["split_key"] for x in s.metrics()["splits"]["recent"]] == [b"k0200"]


def test_a_meta_of_format_2_without_history_opens_and_is_rewritten_as_format_3(tmp_path):
    with _loaded(tmp_path, 10) as s:
        s.put("t", b"k", b"v")
    path = tmp_path / "META"
    doc = json.loads(path.read_bytes())
    del doc["checksum"]
    doc["format"] = 2
    for t in doc["tables"].values():
        del t["splits"]
    doc["checksum"] = meta_module._checksum(doc)
    path.write_bytes(json.dumps(doc).encode())
    with _server(tmp_path) as s:
        assert s.get("t", b"k") == b"v" and s.metrics()["splits"]["recent"] == []
        s.split_region("t", s.regions("t")[0].region_id, b"k0005")
    doc = json.loads(path.read_bytes())
    assert doc["format"] == 3 and [x["split_key"] for x in doc["tables"]["t"]["splits"]] == [
        b"k0005".hex()]


_GOOD = {"parent": 1, "daughters": [2, 3], "split_key": "6d", "time": 1.5,
         "duration_seconds": 0.1}


def _with_history(entry) -> bytes:
    doc = {"format": 3, "epoch": 1, "next_region_id": 5, "parents": [], "procedures": [],
           "tables": {"t": {"attributes": {}, "splits": [entry], "regions": [
               {"id": 4, "start": "", "end": "", "state": "OPEN"}]}}}
    doc["checksum"] = meta_module._checksum(doc)
    return json.dumps(doc).encode()


@pytest.mark.parametrize("change", [
    {"daughters": [2]}, {"split_key": "zz"}, {"time": "noon"}, {"duration_seconds": None},
    {"parent": None}])
def test_a_bad_history_entry_is_refused(change):
    (good,) = MetaDoc.from_bytes(_with_history(_GOOD)).split_history("t")
    assert good == dict(_GOOD, split_key=b"m")
    with pytest.raises(MetaCorruptionError, match="META"):
        MetaDoc.from_bytes(_with_history({k: v for k, v in dict(_GOOD, **change).items()
                                          if v is not None}))
