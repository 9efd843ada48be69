"""The one error type the wire layers raise: Tablestore's (HTTP status, code, message).

The data API's own ``OTSServiceError`` carries the same three facts; the
protocol layer converts it, so the HTTP layer knows one shape only.  Messages
of the data operations live in ``regions.tablestore``; this module holds only
the few that exist at the wire level (transport, protobuf, routing).
"""
from __future__ import annotations

from regions.tablestore.errors import OTSServiceError, service_error, storage_error


class WireError(Exception):
    """A request that gets a Tablestore error response instead of a result."""

    def __init__(self, http_status: int, code: str, message: str):
        super().__init__(message)
        self.http_status = http_status
        self.code = code
        self.message = message

    def __repr__(self) -> str:
        return "WireError(%d, %r, %r)" % (self.http_status, self.code, self.message)


class AuthError(WireError):
    """A request that fails authentication (Tablestore's status, code, message)."""


#: PlainBuffer's and the row converters' one answer to malformed row bytes.
DATA_FORMAT_INVALID = "data format is invalid."


def parameter_invalid(message: str) -> WireError:
    return WireError(400, "OTSParameterInvalid", message)


def data_format_invalid() -> WireError:
    return parameter_invalid(DATA_FORMAT_INVALID)


def server_unavailable() -> WireError:
    return WireError(503, "OTSServerUnavailable", "Server is not available.")


# -- the front end's own refusals (http.py; ours: the wording) ------------
def too_many_connections(cap: int) -> WireError:
    """A connection past the cap, refused before its request is read: the
    service's "busy", which the SDK retries for every API."""
    return WireError(503, "OTSServerBusy", "Server is busy: it holds %d connections, its "
                     "--max-connections; retry later." % cap)


def host_not_allowed(host: str) -> WireError:
    """A request to a server on loopback naming another host (a DNS-rebinding
    defence, as local development servers have)."""
    return WireError(403, "OTSAuthFailed", "Host header %r is not a name of this server: on "
                     "loopback it answers localhost, 127.0.0.1, ::1 and its own address "
                     "(more with --allowed-host)." % host[:100])


# -- authentication (auth.py) -------------------------------------------
def missing_header(name: str) -> AuthError:
    return AuthError(400, "OTSParameterInvalid", "Missing header: '%s'." % name)


def invalid_date(date: str) -> AuthError:
    return AuthError(400, "OTSParameterInvalid", "Invalid date format: %s." % date)


def auth_failed(message: str) -> AuthError:
    """403 OTSAuthFailed with the service's ``message`` (the reasons are auth.py's)."""
    return AuthError(403, "OTSAuthFailed", message)


def unsupported_operation(api: str) -> WireError:
    return parameter_invalid("Unsupported operation: %s." % api)


def index_update_mode_mismatch(mode: str, index_type: str) -> WireError:
    """An IndexMeta whose update mode is not its type's (ours: the reference
    gives no wording; the Python SDK cannot send one)."""
    return parameter_invalid("Invalid index update mode %s for index type %s: a global index is "
                             "IUM_ASYNC_INDEX, a local index IUM_SYNC_INDEX." % (mode, index_type))


def bad_protobuf() -> WireError:
    return parameter_invalid("Parse PBMessage from RawString failed.")


def from_service(e: OTSServiceError) -> WireError:
    """The data API's error, as the wire answers it."""
    return WireError(e.http_status, e.code, e.message)


def body_too_large() -> WireError:
    return from_service(service_error("request_too_large"))


def request_compression(problem: str) -> WireError:
    """A compressed request body (``x-ots-request-compress-type``) that cannot
    be taken: an unknown type, a bad or missing size, a body that does not
    inflate to the size declared (ours: the reference gives no wording)."""
    return parameter_invalid("Invalid compressed request body: %s" % problem)


def method_not_allowed() -> WireError:
    return WireError(405, "OTSMethodNotAllowed", "Only POST method for requests is supported.")


def request_timeout() -> WireError:
    return WireError(408, "OTSRequestTimeout", "Request timeout.")


def internal_error() -> WireError:
    return from_service(service_error("internal_error"))


def from_storage(e: Exception):
    """The answer to a storage failure (``regions.tablestore.errors.storage_error``
    says which: a degraded region's refusal is 503 OTSPartitionUnavailable
    with the cause, corruption 500, the read refused rather than answered
    with wrong data), or None for any other exception."""
    answer = storage_error(e)
    return None if answer is None else from_service(answer)
