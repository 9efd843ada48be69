"""The one error type the wire layers raise: Tablestore's (HTTP status, code, message).

The data API's own ``OTSServiceError`` carries the same three facts; the
protocol layer converts it, so the HTTP layer knows one shape only.  Messages
of the data operations live in ``regions.tablestore``; this module holds only
the few that exist at the wire level (transport, protobuf, routing).
"""
from __future__ import annotations


class WireError(Exception):
    """A request that gets a Tablestore error response instead of a result."""

    def __init__(self, http_status: int, code: str, message: str):
        super().__init__(message)
        self.http_status = http_status
        self.code = code
        self.message = message

    def __repr__(self) -> str:
        return "WireError(%d, %r, %r)" % (self.http_status, self.code, self.message)


def parameter_invalid(message: str) -> WireError:
    return WireError(400, "OTSParameterInvalid", message)


def unsupported_operation(api: str) -> WireError:
    return parameter_invalid("Unsupported operation: %s." % api)


def bad_protobuf() -> WireError:
    return parameter_invalid("Parse PBMessage from RawString failed.")


def body_too_large() -> WireError:
    return WireError(413, "OTSRequestBodyTooLarge", "The size of POST data is too large.")


def method_not_allowed() -> WireError:
    return WireError(405, "OTSMethodNotAllowed", "Only POST method for requests is supported.")


def request_timeout() -> WireError:
    return WireError(408, "OTSRequestTimeout", "Request timeout.")


def internal_error() -> WireError:
    return WireError(500, "OTSInternalServerError", "Internal server error.")


def data_corrupted() -> WireError:
    """Stored data failed a checksum (lsm's ``CorruptionError``): the read is
    refused, never answered with wrong data; the server's log names the file."""
    return WireError(500, "OTSInternalServerError",
                     "Stored data is corrupt: a checksum failed; see the server's log and lsm.tools verify.")
