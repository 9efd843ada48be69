"""Where rows go to and come from: an embedded instance or any endpoint.

``EmbeddedTarget(path)`` opens ``regions.tablestore.OTSClient(path)`` (or
wraps a client given to it; a missing store is made by its first
create_table, or refused); ``EndpointTarget(endpoint, instance, key_id,
secret)`` drives the official ``tablestore`` SDK, so the same tools load the
local ``regions-server`` or the cloud service.  Both speak the SDK's API
(the embedded one mirrors it), so one class does the work and the two
differ only in how they are opened, how a table is created pre-split and
how the table's partitions are learnt.

The SDK client is built with ``NoRetryPolicy``: the importer's one retry
loop (``retry.py``) decides, for both targets alike.  Thread-safety: the
methods may be called from many threads at once (both clients allow it).
"""

from __future__ import annotations

from dataclasses import dataclass

from regions.extras import MissingExtra
from regions.otsserver import sdk

from .errors import TransferError

__all__ = ["RowResult", "Target", "EmbeddedTarget", "EndpointTarget"]


@dataclass(frozen=True)
class RowResult:
    """One row's outcome: ``code``/``message`` are None when it was written."""
    ok: bool
    code: str | None = None
    message: str | None = None
    write_cu: int = 0
    read_cu: int = 0


def _plain(value):
    return bytes(value) if isinstance(value, bytearray) else value


class Target:
    """The operations the tools need, over a client of the SDK's API (``lib``:
    the module its classes come from)."""

    def __init__(self, client, lib, where: str):
        self.client, self.lib, self.where = client, lib, where

    # -- errors ----------------------------------------------------------
    def error_fields(self, exc) -> tuple[str, str, int | None]:
        """``(code, message, http status)`` of an exception from the client."""
        if isinstance(exc, self.lib.OTSServiceError):
            return exc.get_error_code(), exc.get_error_message(), exc.get_http_status()
        if isinstance(exc, self.lib.OTSClientError):
            return "OTSClientError", exc.get_error_message(), exc.get_http_status()
        return type(exc).__name__, str(exc), None

    def _fail(self, what: str, exc) -> TransferError:
        code, message, _ = self.error_fields(exc)
        return TransferError(f"{what} in {self.where}: {code}: {message}")

    # -- tables ----------------------------------------------------------
    def schema(self, table: str) -> list[tuple[str, str]]:
        """The table's primary key ``[(name, TYPE)]``; TransferError if absent."""
        try:
            meta = self.client.describe_table(table).table_meta
        except Exception as e:  # noqa: BLE001 - every failure becomes one line
            raise self._fail(f"cannot describe table {table!r}", e) from None
        return [(c[0], c[1]) for c in meta.schema_of_primary_key]

    def exists(self, table: str) -> bool:
        try:
            return table in self.client.list_table()
        except Exception as e:  # noqa: BLE001
            raise self._fail("cannot list tables", e) from None

    def index_base(self, table: str) -> str | None:
        """The table whose secondary index ``table`` is, or None.  ListTable
        lists data tables only, and DescribeTable of an index names no base:
        a name ListTable does not list is looked for among the indexes each
        listed table's DescribeTable gives (one call per table)."""
        try:
            tables = list(self.client.list_table())
        except Exception as e:  # noqa: BLE001
            raise self._fail("cannot list tables", e) from None
        if table in tables:
            return None
        for base in tables:
            try:
                indexes = self.client.describe_table(base).secondary_indexes or ()
            except Exception:  # noqa: BLE001 - dropped meanwhile: not its base
                continue
            if any(index.index_name == table for index in indexes):
                return base
        return None

    def create_table(self, table: str, schema, split_points=()) -> None:
        lib = self.lib
        args = (lib.TableMeta(table, list(schema)), lib.TableOptions(),
                lib.ReservedThroughput(lib.CapacityUnit(0, 0)))
        try:
            self._create(args, list(split_points))
        except Exception as e:  # noqa: BLE001
            raise self._fail(f"cannot create table {table!r}", e) from None

    def _create(self, args, split_points):
        self.client.create_table(*args, split_points=split_points or None)

    def split_points(self, table: str) -> list:
        """The table's partition boundaries now: typed partition-key values
        (BINARY as ``bytes``, as the planner takes them)."""
        return [_plain(p) for p in self.client.describe_table(table).shard_splits]

    # -- rows ------------------------------------------------------------
    def write_rows(self, table: str, rows) -> list[RowResult]:
        """PutRow (condition IGNORE) of each ``(primary_key, attributes)`` in
        one BatchWriteRow; one result per row, in order.  A failure of the
        whole request raises (the caller decides on retries)."""
        lib = self.lib
        ignore = lib.Condition(lib.RowExistenceExpectation.IGNORE)
        items = [lib.PutRowItem(lib.Row(pk, attrs), ignore) for pk, attrs in rows]
        request = lib.BatchWriteRowRequest()
        request.add(lib.TableInBatchWriteRowItem(table, items))
        response = self.client.batch_write_row(request)
        ok, failed = response.get_put()
        out = [None] * len(rows)
        for item in ok + failed:
            c = item.consumed
            out[item.index] = RowResult(item.is_ok, item.error_code, item.error_message,
                                        c.write if c else 0, c.read if c else 0)
        return out

    def read_range(self, table: str, start, end, columns=None, limit=None):
        """One GetRange page: ``(rows, next_start or None, read CU)``; rows as
        ``(primary_key, [(name, value, ts)])``."""
        consumed, next_start, rows, _ = self.client.get_range(
            table, self.lib.Direction.FORWARD, start, end, columns_to_get=columns or None,
            limit=limit, max_version=1)
        return ([(r.primary_key, r.attribute_columns) for r in rows], next_start,
                consumed.read if consumed else 0)

    def close(self) -> None:
        if self._owns and hasattr(self.client, "close"):  # the SDK's client has none
            self.client.close()


class EmbeddedTarget(Target):
    """An embedded instance in ``path`` (``client``: an open OTSClient to use
    instead, which the target then does not close).

    A store that is not there is made only with ``create``, and only by the
    first ``create_table``: until then the target has no tables, so a run
    that stops at its checks leaves nothing behind.  Without ``create`` a
    missing store is a TransferError ("no store at PATH")."""

    def __init__(self, path: str | None = None, client=None, server_options=None,
                 create: bool = True):
        import regions
        import regions.tablestore as lib
        from regions.tablestore.client import MEMORY
        super().__init__(client, lib, path or "the embedded store")
        self._owns = client is None
        self._path, self._server_options = path, server_options
        if client is not None:
            return
        if path in (None, MEMORY) or regions.RegionServer.exists(path):
            self.client = self._open()
        elif not create:
            raise TransferError(f"no store at {path}")

    def _open(self):
        try:
            return self.lib.OTSClient(self._path, server_options=self._server_options)
        except Exception as e:  # noqa: BLE001
            raise TransferError(f"cannot open the embedded store in {self._path}: {e}") from None

    def exists(self, table: str) -> bool:
        return self.client is not None and super().exists(table)

    def index_base(self, table: str) -> str | None:
        return super().index_base(table) if self.client is not None else None

    def schema(self, table: str) -> list[tuple[str, str]]:
        if self.client is None:
            raise TransferError(f"cannot describe table {table!r}: no store at {self.where}")
        return super().schema(table)

    def create_table(self, table: str, schema, split_points=()) -> None:
        if self.client is None:
            self.client = self._open()
        super().create_table(table, schema, split_points)


class EndpointTarget(Target):
    """A Tablestore endpoint (``http://host:port`` of ``regions-server``, or
    the cloud's) through the official SDK, with its credentials."""

    _owns = True

    def __init__(self, endpoint: str, instance: str, key_id: str, secret: str):
        try:
            lib = sdk.load("--endpoint")
        except MissingExtra as e:
            raise TransferError(str(e)) from None
        try:
            client = lib.OTSClient(endpoint, key_id, secret, instance,
                                   retry_policy=lib.NoRetryPolicy())
        except lib.OTSClientError as e:
            raise TransferError(f"cannot use endpoint {endpoint}: {e.get_error_message()}") from None
        super().__init__(client, lib, endpoint)

    def _create(self, args, split_points):
        # The SDK's public create_table has no split points; this is its own
        # pre-split call (CreateTable with partitions).
        self.client._create_table_ex(*args, split_points=split_points)

    def split_points(self, table: str) -> list:
        # DescribeTable's response carries the partitions (shard_splits), but
        # the SDK's decoder drops them: send the request through the SDK's own
        # protocol object and decode the message it parsed.
        from tablestore.auth import RequestContext
        from tablestore.plainbuffer.plain_buffer_coded_stream import PlainBufferCodedInputStream
        from tablestore.plainbuffer.plain_buffer_stream import PlainBufferInputStream
        c = self.client
        context = RequestContext(c.credentials_provider.get_credentials())
        query, headers, body = c.protocol.make_request("DescribeTable", c._signer, context, table)
        status, reason, res_headers, res_body = c.connection.send_receive(query, headers, body)
        c.protocol.handle_error("DescribeTable", query, status, reason, res_headers, res_body,
                                c._signer, context)
        _, proto = c.protocol.decoder.decode_response("DescribeTable", res_body, "")
        points = []
        for split in proto.shard_splits:
            pk, _ = PlainBufferCodedInputStream(PlainBufferInputStream(split)).read_row()
            points.append(_plain(pk[0][1]))
        return points
