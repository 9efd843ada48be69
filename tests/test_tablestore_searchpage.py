"""The search page's C helpers (regions.tablestore._searchpage): the stored
document's layout (the key; the values asked once, when needed) and the
keys-only rows, against the Python row-key codec (pkcodec) and tantivy's
own documents."""
import random

import pytest

from regions.tablestore import _searchpage, pkcodec

tantivy = pytest.importorskip("tantivy")


def _doc(blob):
    doc = tantivy.Document()
    doc.add_bytes("_doc", blob)
    return doc


def random_pk(rng):
    """(types, values) of a random primary key of 1-4 columns."""
    types, values = [], []
    for _ in range(rng.randrange(1, 5)):
        kind = rng.choice(["INTEGER", "STRING", "BINARY"])
        types.append(kind)
        if kind == "INTEGER":
            values.append(rng.randrange(-(1 << 63), 1 << 63))
        elif kind == "STRING":
            values.append("".join(rng.choice("a\x00é中z") for _ in range(rng.randrange(8))))
        else:
            values.append(bytearray(rng.randrange(256) for _ in range(rng.randrange(8))))
    return types, values


def test_stored_reads_back_its_key_and_asks_its_values_once():
    rng = random.Random(7)
    for _ in range(300):
        types, values = random_pk(rng)
        key = pkcodec.encode_pk(types, values)
        fields = {"f0": [rng.random(), -1.5], "f1": ["x\u00e9", ""], "f2": [True]}
        if rng.random() < 0.3:
            fields = {}
        asked = []
        stored = _searchpage.Stored(_doc(_searchpage.Stored.pack(key)),
                                    lambda k: asked.append(k) or fields)
        assert stored.row_key == key and asked == []      # a page reads the key alone
        assert stored.fields() == fields
        for name, want in fields.items():
            assert stored.get(name) == want and stored[name] == want
        assert stored.get("absent", "d") == "d"
        with pytest.raises(KeyError):
            stored["absent"]
        assert asked == [key]


def test_key_rows_are_the_python_codecs_decoding():
    rng = random.Random(8)
    for _ in range(300):
        types, values = random_pk(rng)
        names = ["k%d" % i for i in range(len(types))]
        key = pkcodec.encode_pk(types, values)
        rows = _searchpage.key_rows(names, [(key, 1.0, None)])
        assert rows == [(list(zip(names, pkcodec.decode_pk(key, len(names))[0])), [])]
        assert [type(v) for _, v in rows[0][0]] == [
            {"INTEGER": int, "STRING": str, "BINARY": bytearray}[t] for t in types]


def test_load_reads_each_hits_document():
    keys = [pkcodec.encode_pk(["INTEGER"], [i]) for i in range(5)]
    docs = {i: _doc(_searchpage.Stored.pack(k)) for i, k in enumerate(keys)}
    page = _searchpage.load(docs.__getitem__, [(9.5 - i, i) for i in range(5)],
                            lambda k: {"n": [keys.index(k)]})
    assert [(k, v, d["n"]) for k, v, d in page] == [(keys[i], 9.5 - i, [i]) for i in range(5)]


def test_a_document_shorter_than_its_key_and_a_key_too_long_are_refused():
    with pytest.raises(ValueError, match="shorter than its key"):
        _searchpage.Stored(_doc(b"\x00\x09abc"), dict)
    with pytest.raises(ValueError, match="longer than 65,535"):
        _searchpage.Stored.pack(b"x" * 70_000)
