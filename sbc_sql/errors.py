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
