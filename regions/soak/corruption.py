"""Experiment 5: a byte flipped at every offset, and truncations, of the files of a store.

Targets (each a small pristine directory built once, copied for every case):

* ``table``: every L0 table of a store of three flushes (compressed blocks,
  bloom filters, several data blocks each);
* ``manifest`` and ``current``: the same store's MANIFEST and CURRENT;
* ``wal``: a store whose writes are only in its WAL (every record, so the
  middle ones too);
* ``meta``: a region server's META (two regions after a split), flipped
  with 0x80 and with 0x01 (an ASCII byte that stays ASCII).

A flip XORs one byte (0x80, LevelDB's ``Corrupt()``; a ``count`` above the
number of such cases flips each of the 8 bits instead); a truncation cuts the
file at evenly spaced lengths and at every offset of the WAL's last record.
For each case the directory is reopened and every key read, point and scan.
Checked: every read returns the right value or raises ``CorruptionError``
(a WAL tail cut may drop exactly the records it cut), opening either works
or raises the engine's or the region layer's error; never a wrong value,
a false "not found" in an intact file, another exception, or a hang (a
watchdog ends the run with every thread's stack after ``HANG_SECONDS``);
and ``lsm.tools.verify`` reports the damage the reads saw.  One case goes
over the wire: a flipped table behind ``regions-server`` answers the
official SDK with a clean ``OTSServiceError``.
"""
import faulthandler
import logging
import os
import random
import shutil
import time

import lsm
from lsm import filenames
from lsm.errors import CorruptionError, LSMError
from lsm.tools import verify

import regions
from regions.errors import RegionError

from . import Summary, _cli
from .ioerrors import scratch_dir

__all__ = ["run", "main", "cases", "HANG_SECONDS"]

#: One case (an open and every read) taking longer than this is a hang.
HANG_SECONDS = 60
_KEYS = 36
_TRUNCATIONS = 24           # evenly spaced lengths per file


def _key(i):
    return b"key%04d" % i


def _value(i):
    return (b"value-%04d-" % i) * (1 + i % 4)


def _options():
    return lsm.Options(background=False, memtable_bytes=1 << 20, block_size=128, compression=True,
                       compression_min_level=0)


def _build_tables(path):
    with lsm.DB.open(path, _options()) as db:
        for n in range(3):
            for i in range(n, _KEYS, 3):
                db.put(_key(i), _value(i))
            db.flush()


def _build_wal(path):
    """Writes only in the WAL; records where each record ends (``record_ends``)."""
    ends = []
    with lsm.DB.open(path, _options()) as db:
        for i in range(_KEYS // 2):
            db.put(_key(i), _value(i))
            ends.append(db._log.file.size)      # bytes appended (zeros lie ahead on disk)
    with open(os.path.join(path, "record_ends"), "w", encoding="ascii") as f:
        f.write(" ".join(map(str, ends)))


def _build_meta(path):
    with regions.RegionServer.open(path, regions.ServerOptions(background_workers=0, split_policy="disabled")) as s:
        s.create_table("t")
        for i in range(_KEYS):
            s.put("t", _key(i), _value(i))
        s.split_region("t", s.regions("t")[0].region_id, _key(_KEYS // 2))


def _files(path, kind):
    names = os.listdir(path)
    if kind == "current":
        return [filenames.CURRENT]
    if kind == "meta":
        return ["META"]
    want = {"table": "sst", "manifest": "manifest", "wal": "log"}[kind]
    return sorted(n for n in names if (filenames.parse(n) or ("", 0))[0] == want and
                  os.path.getsize(os.path.join(path, n)))


_PRISTINE = {"table": _build_tables, "manifest": _build_tables, "current": _build_tables,
             "wal": _build_wal, "meta": _build_meta}


_EVERY_BIT = tuple(1 << b for b in range(8))


def cases(pristine, every_bit=False):
    """Every case: (target, file name, "flip"/"cut", offset or length, xor byte).

    A flip is XOR 0x80 (and 0x01 for META), or each of the 8 single-bit flips
    with ``every_bit``."""
    out = []
    for target in _PRISTINE:
        root = pristine[target]
        for name in _files(root, target):
            size = os.path.getsize(os.path.join(root, name))
            xors = _EVERY_BIT if every_bit else (0x80, 0x01) if target == "meta" else (0x80,)
            out += [(target, name, "flip", off, x) for off in range(size) for x in xors]
            cuts = {size * j // _TRUNCATIONS for j in range(_TRUNCATIONS)}
            if target == "wal":
                cuts.update(range(_last_record_start(root), size))
            out += [(target, name, "cut", n, 0) for n in sorted(cuts)]
    return out


def _last_record_start(root):
    """Offset of the last WAL record of the ``wal`` target."""
    return _wal_ends(root)[-2][1]


def _damage(path, how, at, xor):
    if how == "cut":
        os.truncate(path, at)
        return
    with open(path, "r+b") as f:
        f.seek(at)
        b = f.read(1)[0]
        f.seek(at)
        f.write(bytes([b ^ xor]))


class _Reads:
    """The outcome of reopening a damaged copy and reading every key."""

    def __init__(self):
        self.refused = None         # the open's error, if it refused
        self.corrupt = 0            # reads that raised CorruptionError
        self.missing = set()        # keys not found
        self.wrong = []             # (key, value read) never written there
        self.crash = None           # an unexpected exception


def _read_lsm(path, model):
    r = _Reads()
    try:
        db = lsm.DB.open(path, _options())
    except LSMError as e:
        r.refused = e
        return r
    except Exception as e:  # noqa: BLE001 - the finding
        r.crash = e
        return r
    try:
        _read_all(r, db.get, lambda: db.scan(), model)
    finally:
        db.close()
    return r


def _read_server(path, model):
    r = _Reads()
    try:
        s = regions.RegionServer.open(path, regions.ServerOptions(background_workers=0, split_policy="disabled"))
    except (LSMError, RegionError) as e:
        r.refused = e
        return r
    except Exception as e:  # noqa: BLE001
        r.crash = e
        return r
    try:
        if "t" not in s.list_tables():
            r.missing.update(model)
            return r
        _read_all(r, lambda k: s.get("t", k), lambda: s.scan("t"), model)
    finally:
        s.close()
    return r


def _read_all(r, get, scan, model):
    try:
        for k, v in model.items():
            try:
                got = get(k)
            except CorruptionError:
                r.corrupt += 1
                continue
            if got is None:
                r.missing.add(k)
            elif got != v:
                r.wrong.append((k, got))
        try:
            rows = list(scan())
        except CorruptionError:
            r.corrupt += 1
            return
        seen = dict(rows)
        if len(seen) != len(rows) or [k for k, _ in rows] != sorted(seen):
            r.wrong.append(("scan", "unsorted or duplicated keys"))
        for k, v in seen.items():
            if model.get(k) != v:
                r.wrong.append((k, v))
        r.missing.update(k for k in model if k not in seen)
    except Exception as e:  # noqa: BLE001
        r.crash = e


def _allowed_missing(case, pristine, model):
    """Keys a case may lose without a report: those of WAL records at or after a tail cut."""
    target, _name, how, at, _x = case
    if target != "wal":
        return set()
    last = _last_record_start(pristine["wal"])
    if how == "cut" or at >= last:
        cut = at if how == "cut" else last
        return {k for k, end in _wal_ends(pristine["wal"]) if end > cut}
    return set()


def _wal_ends(root):
    with open(os.path.join(root, "record_ends"), encoding="ascii") as f:
        return [(_key(i), int(n)) for i, n in enumerate(f.read().split())]


def _build_pristine(root):
    pristine = {}
    for target, build in _PRISTINE.items():
        build(os.path.join(root, "pristine-" + target))
        pristine[target] = os.path.join(root, "pristine-" + target)
    return pristine


def _model(target):
    n = _KEYS // 2 if target == "wal" else _KEYS
    return {_key(i): _value(i) for i in range(n)}


def _one(case, pristine, work, summary):
    target, name, how, at, xor = case
    shutil.rmtree(work, ignore_errors=True)
    shutil.copytree(pristine[target], work)
    _damage(os.path.join(work, name), how, at, xor)
    problems = verify(work) if target != "meta" else _verify_regions(work)
    model = _model(target)
    r = (_read_server if target == "meta" else _read_lsm)(work, model)
    where = f"{target} {name} {how}@{at}" + (f" ^{xor:#04x}" if how == "flip" else "")
    if r.crash is not None:
        summary.failure("crashes", f"{where}: {type(r.crash).__name__}: {r.crash}")
        return
    for k, v in r.wrong[:3]:
        summary.failure("wrong", f"{where}: {k!r} read {v!r:.40}")
    missing = r.missing - _allowed_missing(case, pristine, model)
    if missing and r.refused is None:
        summary.failure("wrong", f"{where}: {len(missing)} keys silently missing, e.g. {min(missing)!r}")
    summary.verified += len(model) - len(r.missing) if r.refused is None else 0
    if (r.refused is not None or r.corrupt) and not problems and target not in ("current", "meta"):
        summary.failure("wrong", f"{where}: the reads saw corruption, lsm.tools verify reports nothing")


def _verify_regions(root):
    base = os.path.join(root, "regions")
    return [p for n in sorted(os.listdir(base)) for p in verify(os.path.join(base, n))]


def wire_case(root, summary) -> None:
    """A flipped data block behind regions-server: GetRow through the official SDK
    gets the service's corruption error (``data_corrupted``), a GetRange too;
    the server stays up."""
    import tablestore as ts
    from regions.otsserver.cli import make_server
    from regions.tablestore.errors import service_error
    data = os.path.join(root, "wire")
    client = regions.tablestore.OTSClient(data)
    client.create_table(regions.tablestore.TableMeta("t", [("k", "STRING")]), regions.tablestore.TableOptions(),
                        regions.tablestore.ReservedThroughput(regions.tablestore.CapacityUnit(0, 0)))
    for i in range(50):
        client.put_row("t", regions.tablestore.Row([("k", "k%03d" % i)], [("v", "x" * 50)]))
    client._server.flush_all()
    client.close()
    store = os.path.join(data, "regions", sorted(os.listdir(os.path.join(data, "regions")))[0])
    table = next(os.path.join(store, n) for n in os.listdir(store) if n.endswith(".sst"))
    _damage(table, "flip", 20, 0x80)
    expected = service_error("data_corrupted")
    srv = make_server(data, "127.0.0.1", 0, "inst", "ak", "sk").start()
    try:
        sdk = ts.OTSClient(srv.endpoint, "ak", "sk", "inst", retry_policy=ts.NoRetryPolicy(), socket_timeout=10)
        logging.getLogger("tablestore").setLevel(logging.CRITICAL)
        for call in (lambda: sdk.get_row("t", [("k", "k001")], max_version=1),
                     lambda: sdk.get_range("t", ts.Direction.FORWARD, [("k", ts.INF_MIN)], [("k", ts.INF_MAX)],
                                           max_version=1)):
            try:
                call()
                summary.failure("wrong", "wire: a read of a corrupt table succeeded")
            except ts.OTSServiceError as e:
                got = (e.get_http_status(), e.get_error_code(), e.get_error_message())
                if got != (expected.http_status, expected.code, expected.message):
                    summary.failure("crashes", f"wire: {got}, not the corruption error")
            except Exception as e:  # noqa: BLE001
                summary.failure("crashes", f"wire: {type(e).__name__}: {e}")
            summary.cycles += 1
        sdk.list_table()                    # the server is still up
    finally:
        srv.stop()


def run(seed=0, count=None, seconds=None, dir=None) -> Summary:
    """Every case (or ``count`` of them, chosen by ``seed``; a count above the
    number of cases draws from the every-bit cases) within ``seconds``, then
    the wire case."""
    summary = Summary("corruption", seed, "byte flips at every offset, truncations")
    start = time.monotonic()
    root = scratch_dir(dir)
    logging.getLogger("lsm").setLevel(logging.CRITICAL)
    try:
        pristine = _build_pristine(root)
        todo = cases(pristine)
        if count is not None and count > len(todo):       # a long run: every bit of every byte
            todo = cases(pristine, every_bit=True)
        if count is not None and count < len(todo):
            todo = random.Random(seed).sample(todo, count)
        work = os.path.join(root, "work")
        for case in todo:
            if seconds is not None and time.monotonic() - start > seconds:
                break
            faulthandler.dump_traceback_later(HANG_SECONDS, exit=True)
            try:
                _one(case, pristine, work, summary)
            finally:
                faulthandler.cancel_dump_traceback_later()
            summary.cycles += 1
        wire_case(root, summary)
    finally:
        logging.getLogger("lsm").setLevel(logging.NOTSET)
        shutil.rmtree(root, ignore_errors=True)
    summary.seconds = time.monotonic() - start
    return summary


def main(argv=None) -> int:
    return _cli.main("corruption", __doc__, run, argv, "cases (default: all of them)")
