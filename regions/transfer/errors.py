"""The transfer tools' error types.

``TransferError`` (a ``ValueError``): a request that cannot run at all (bad
arguments, an unreadable file, a missing table); the scripts print it as one
line and exit with status 2, having written nothing.  ``BadValue``: one
value of one row cannot become a Tablestore value; the importer turns it into
a ``BadRow`` that names the file, the line and the column, and the row is
rejected (nothing written for it) while the other rows go on.
"""

__all__ = ["TransferError", "BadValue", "BadRow"]


class TransferError(ValueError):
    """The import or export cannot start (or cannot go on) as asked."""


class BadValue(ValueError):
    """One value does not fit its column's type or the service's limits."""


class BadRow(ValueError):
    """One input row that is not written: ``where`` is ``file:line``, ``column``
    the column (name, and 1-based position when the format has one) or None."""

    def __init__(self, source, line, column, message):
        self.source, self.line, self.column, self.message = source, line, column, message
        where = f"{source}:{line}"
        super().__init__(f"{where}: column {column}: {message}" if column else f"{where}: {message}")
