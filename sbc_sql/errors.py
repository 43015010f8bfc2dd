"""One error hierarchy. Each raise site says the value, the limit and the fix.

Messages name tables, columns and counts, never cell values: the data is private.
"""

from __future__ import annotations


class SbcError(Exception):
    """sbc-sql could not do what was asked."""


class InputError(SbcError):
    """The database, table, column or option given cannot be used as asked."""


class RoleError(InputError):
    """The column roles are incomplete or contradictory."""


class OutputExistsError(InputError):
    """A name the release would write (its view, tables or text view) is taken."""


class VerificationError(SbcError):
    """The release failed verification; nothing was written."""


class ResourceError(SbcError):
    """The run would exceed this machine's memory."""


class EngineError(SbcError):
    """The database engine could not run what was asked (a full disk, a corrupt file, too
    little memory, a value its type cannot hold). The message names the operation, the
    cause and the fix, never the data: the engine's own text, which may quote rows and
    values, is read by the engine's module and never shown."""

    def __init__(self, message: str, kind: str = "other") -> None:
        super().__init__(message)
        #: what went wrong, for callers that branch on it: 'disk-full', 'permission',
        #: 'missing', 'corrupt', 'locked', 'memory', 'conversion', 'csv' or 'other'
        self.kind = kind
