"""What the fuzz experiment's parts share: the table they attack, its full
snapshot, the byte mutations, and failure reports that keep each distinct
failure's text once."""
__all__ = ["report", "forget", "table_meta", "seed_rows", "snapshot", "mutate"]


def report(summary, kind, text):
    """Count a failure; keep its text only the first time (the first 60
    characters say which it is), so that one defect does not hide the others."""
    seen = _SEEN.setdefault(id(summary), set())
    if text[:60] in seen:
        setattr(summary, kind, getattr(summary, kind) + 1)
        return
    seen.add(text[:60])
    summary.failure(kind, text)


_SEEN = {}


def forget(summary):
    """Drop what ``report`` remembers of ``summary`` (the run is over)."""
    _SEEN.pop(id(summary), None)


def table_meta(ts, name):
    """The arguments of ``create_table`` for a table (p STRING, n INTEGER) of
    up to 3 versions; ``ts`` is the embedded API or the official SDK."""
    return (ts.TableMeta(name, [("p", "STRING"), ("n", "INTEGER")]), ts.TableOptions(max_version=3),
            ts.ReservedThroughput(ts.CapacityUnit(0, 0)))


def seed_rows(client, ts, table, rows=20):
    """Rows for malformed requests to leave alone."""
    for i in range(rows):
        client.put_row(table, ts.Row([("p", "p%d" % (i % 4)), ("n", i)], [("a", i), ("b", "s%d" % i)]))


def snapshot(client, ts, table):
    """Every row of ``table`` with every version: what a refused input must leave alone."""
    out, start = [], [("p", ts.INF_MIN), ("n", ts.INF_MIN)]
    while start is not None:
        _, start, rows, _ = client.get_range(table, ts.Direction.FORWARD, start,
                                             [("p", ts.INF_MAX), ("n", ts.INF_MAX)], max_version=3)
        out += [(tuple(r.primary_key), tuple(tuple(c) for c in r.attribute_columns)) for r in rows]
    return out


def mutate(rng, data: bytes) -> bytes:
    """Bits flipped, a cut, bytes inserted, a span repeated or deleted."""
    b = bytearray(data)
    for _ in range(rng.choice([1, 1, 2, 3])):
        what = rng.random()
        if what < 0.5 and b:
            i = rng.randrange(len(b))
            b[i] ^= 1 << rng.randrange(8)
        elif what < 0.65:
            del b[rng.randrange(len(b) + 1):]
        elif what < 0.8:
            i = rng.randrange(len(b) + 1)
            b[i:i] = bytes(rng.randrange(256) for _ in range(rng.randrange(1, 9)))
        elif b:
            i = rng.randrange(len(b))
            j = min(len(b), i + rng.randrange(1, 32))
            if rng.random() < 0.5:
                b[i:i] = b[i:j]
            else:
                del b[i:j]
    return bytes(b)
