"""The memtable's versions against a model (a dict of lists): every write
is kept, a key's chain is newest first, and a read at any sequence finds
the newest version at or below it, whether the write came one at a time
(``add``) or in a batch (``add_all``)."""
from hypothesis import given, settings, strategies as st

from lsm._memtable import MemTable

KEYS = st.binary(min_size=1, max_size=2).map(lambda b: bytes(c % 4 + 97 for c in b))
WRITES = st.lists(st.lists(st.tuples(st.sampled_from([0, 1, 1]), KEYS), min_size=1, max_size=6),
                  min_size=1, max_size=40)


@settings(max_examples=200, deadline=None)
@given(batches=WRITES)
def test_versions_match_a_model_at_every_sequence(batches):
    one, batched, model = MemTable(64), MemTable(64), {}
    seq = 1
    for batch in batches:
        ops = [(kind, key, b"v%d" % (seq + i) if kind else b"") for i, (kind, key) in enumerate(batch)]
        batched.add_all(seq, ops)
        for i, (kind, key, value) in enumerate(ops):
            one.add(seq + i, kind, key, value)
            model.setdefault(key, []).append((seq + i, kind, value))
        seq += len(ops)
    for m in (one, batched):
        assert len(m) == seq - 1
        assert sorted(m.keys) == sorted(model)
        for key, vs in model.items():
            chain = m.versions[key].chain()          # oldest first
            assert [(v.seq, v.kind, v.value) for v in chain] == vs
            for at in range(seq + 1):
                older = [(k, v) for s, k, v in vs if s <= at]
                assert m.get(key, at) == (older[-1] if older else None)
