"""Read-side row assembly: from a row's stored entries to the SDK's Row shape.

Steps, in order (each a function, so GetRow, BatchGetRow and GetRange share
them): merge the row's head and deltas (cells.merge_row), apply the table's
max_versions and TTL (``visible``), apply the read's time_range and
max_version (``select``), the column filter (conditions.evaluate), then
``columns_to_get`` (``project``).  Returned rows carry PK columns in schema
order and attribute columns sorted by name, versions newest first, as
(name, value, ts) triples.  Pure functions, thread-safe.
"""
from . import cells
from .capacity import cells_size
from .conditions import evaluate

__all__ = ["visible", "select", "project", "assemble"]


def visible(row_key_len, head, deltas, ttl, max_versions, now_ms):
    """{name: [(ts, value)] newest first} of the row's live cells, or {} if none."""
    if head is not None and not deltas:
        gen, cell_list = cells.decode_head(head)
        if not cell_list:
            return {}
        columns = {}
        for name, value, ts in cell_list:
            columns.setdefault(name, []).append((ts, value))
    else:
        columns = cells.merge_row(row_key_len, head, deltas)
    min_ts = now_ms - ttl * 1000 if ttl > 0 else None
    out = {}
    for name, versions in columns.items():
        versions = versions[:max_versions]
        if min_ts is not None:
            versions = [v for v in versions if v[0] >= min_ts]
        if versions:
            out[name] = versions
    return out


def select(columns, max_version, time_range):
    """The versions a read asks for: within [lo, hi) and at most ``max_version`` per column."""
    if time_range is None and max_version is not None and max_version >= 1:
        if max_version == 1:
            return {n: v[:1] for n, v in columns.items()}
        return {n: v[:max_version] for n, v in columns.items()}
    out = {}
    lo, hi = time_range if time_range is not None else (None, None)
    for name, versions in columns.items():
        if lo is not None:
            versions = [v for v in versions if lo <= v[0] < hi]
        if max_version is not None:
            versions = versions[:max_version]
        if versions:
            out[name] = versions
    return out


def project(pk_names, pk_values, columns, names):
    """(primary_key, attribute_columns) to return, or None when nothing named exists.

    ``names`` is the set from ``columns_to_get`` or None for all columns.  A
    named PK column is returned; a row is returned when at least one named
    column, PK or attribute, exists in it.
    """
    if names is None:
        if not columns:
            return None
        pk = list(zip(pk_names, pk_values))
        attrs = [(n, v, ts) for n in sorted(columns) for ts, v in columns[n]]
        return pk, attrs
    pk = [(n, v) for n, v in zip(pk_names, pk_values) if n in names]
    attrs = [(n, v, ts) for n in sorted(columns) if n in names for ts, v in columns[n]]
    if not pk and not attrs:
        return None
    if not attrs and not columns:
        return None
    return pk, attrs


def assemble(schema, pk_values, row_key_len, head, deltas, now_ms, names, max_version,
             time_range, column_filter):
    """(Row parts or None, bytes read) of one stored row for a read request."""
    live = visible(row_key_len, head, deltas, schema.ttl, schema.max_versions, now_ms)
    if not live:
        return None, 0
    chosen = select(live, max_version, time_range)
    size = sum(cells_size([(n, v) for _, v in vs]) for n, vs in chosen.items())
    if column_filter is not None and not evaluate(column_filter, chosen):
        return None, size
    return project(schema.names, pk_values, chosen, names), size
