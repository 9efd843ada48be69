"""The one C-or-Python switch (lsm/purepython.py): with LSM_REGIONS_PUREPYTHON=1
every fork takes its Python general path, and the model-based tests pass that
way too (msgpack's MSGPACK_PUREPYTHON, run by its tests the same way).

The flag is read once, at import, so both tests run a child interpreter."""
import os
import subprocess
import sys

import lsm.purepython

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

#: The model-based tests of each layer the switch turns forks in: the engine
#: against a dict (two of its four seeds, one with a background thread: the
#: switch turns only the DB's write binding there), the region server against
#: a dict through splits and reopens, the row API against its model (and its
#: behaviours, one by one).
MODEL_TESTS = ["tests/test_db_model.py::test_random_operations_match_a_dict_model[1-False]",
               "tests/test_db_model.py::test_random_operations_match_a_dict_model[3-True]",
               "tests/test_db_model.py::test_views_of_a_store_behave_like_its_key_range",
               "tests/test_regions_model.py", "tests/test_tablestore_model.py",
               "tests/test_tablestore_rows.py"]

_PROBE = """
import lsm, regions
from regions.tablestore import OTSClient, Row, TableMeta, TableOptions, reads
assert lsm.PUREPYTHON and regions.PUREPYTHON
with lsm.DB.open(None) as db:
    assert "put" not in vars(db)           # DB.put, not the C write path bound over it
with OTSClient(None) as client:
    client.create_table(TableMeta("t", [("k", "INTEGER")]), TableOptions())
    assert client._writer.c_path is None                       # writes.py's fork
    client.put_row("t", Row([("k", 1)], [("a", 1)]))
    assert client._row_reader.get("t", [("k", 1)]) is None      # the C reader declines
    assert not reads.decode_in_c(client._schemas["t"], None, None, None)   # reads.py's fork
    assert client.get_row("t", [("k", 1)])[1].attribute_columns[0][:2] == ("a", 1)
from regions.otsserver import convert, plainbuffer, rowmatrix
assert not convert.CODEC.compiled                                # the wire's row encoder
assert plainbuffer.crc8_buffer is plainbuffer.crc8               # the block checksum
block = rowmatrix.encode_rows([([("k", 1)], [("a", 2, 1)])])
assert block[-1] == plainbuffer.crc8(0, block[:-1])
"""


def _run(args, timeout):
    env = dict(os.environ, **{lsm.purepython.ENV: "1"})
    return subprocess.run([sys.executable] + args, cwd=ROOT, env=env, capture_output=True,
                          text=True, timeout=timeout)


def test_the_switch_sends_each_fork_down_the_python_path():
    r = _run(["-c", _PROBE], 60)
    assert r.returncode == 0, r.stderr[-3000:]


def test_the_model_based_tests_pass_with_every_fork_on_the_python_path():
    r = _run(["-m", "pytest", "-q", "-x", "-p", "no:cacheprovider"] + MODEL_TESTS, 300)
    assert r.returncode == 0, (r.stdout[-4000:], r.stderr[-2000:])
