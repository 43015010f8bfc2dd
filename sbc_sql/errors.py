"""One error hierarchy. Each raise site says the value, the limit and the fix.

Messages name tables, columns and counts, never cell values: the data is private.
"""

from __future__ import annotations

import re
import threading

#: what an interrupted command says (the entry point and the command line alike)
INTERRUPTED = "Interrupted; nothing was written."
#: set in the command's process the moment Ctrl-C or SIGTERM arrives, by a thread that does
#: not wait for the main thread to run Python again (:mod:`sbc_sql.__main__`): an engine's
#: call that fails after it (a Spark driver whose workers the signal to the process group
#: stopped) failed because of it, and is reported as the interruption
SIGNALLED = threading.Event()


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


#: a flag whose Python keyword has another name or takes no value
_KEYWORDS = {
    "db": "database",
    "sql": "sql_only=True",
    "replace": "replace=True",
    "exact": "mode='exact'",
    "paper": "algorithm='sbca-paper'",
    "hierarchy": "hierarchies",
}
_FLAG = re.compile(
    r"--([a-z][a-z-]*)(?: (-?\d[\w.]*|-?(?:inf|nan)\b|'[^']*'|[\w.]+=[\w.,=]+|\S+\.(?:parquet|csv|png)\b))?"
)


def in_python_terms(message: str) -> str:
    """A message in a Python caller's terms: '--k 2' reads 'k=2', '--replace' reads
    'replace=True', '--weights age=2' reads "weights='age=2'", '--drop' reads 'drop=...'."""
    return _in_terms(message, _KEYWORDS, "=")


#: a flag whose SQL argument (sbc.anonymize(...) and the like) has another name or no value
_ARGUMENTS = {
    "table": "source",
    "drop": "drop_columns",
    "replace": "replace => true",
    "exact": "mode => 'exact'",
    "paper": "algorithm => 'sbca-paper'",
}


#: advice to rerun the command line with a flag the SQL functions have no argument for
#: (--debug, --sql): left out of their messages, which name only their own arguments
_COMMAND_LINE_ONLY = re.compile(
    r"[;,]? (?:or )?rerun with --(?:debug|sql) to see (?:where(?: it happened)?|it)"
)


def in_sql_terms(message: str) -> str:
    """A message in the terms of the SQL functions' named arguments: '--k 2' reads 'k => 2',
    '--table' reads 'source => ...', '--weights age=2' reads "weights => 'age=2'"; advice
    to rerun with --debug or --sql, which they do not take, is left out."""
    return _in_terms(_COMMAND_LINE_ONLY.sub("", message), _ARGUMENTS, " => ")


def _in_terms(message: str, renamed: dict[str, str], binds: str) -> str:
    """Each flag of ``message`` as a keyword: its name (``renamed``, or the flag's own with
    '_' for '-'), ``binds`` and its value (quoted unless a number); a name in ``renamed``
    that holds ``binds`` already is the whole keyword."""

    def keyword(m: re.Match[str]) -> str:
        flag, value = m.group(1), m.group(2)
        name = renamed.get(flag, flag.replace("-", "_"))
        if binds.strip() in name:
            return name + (f" {value}" if value else "")
        if value is None:
            return f"{name}{binds}..."
        if re.fullmatch(r"-?(?:inf|nan)", value):  # a float without a literal of its own
            return f"{name}{binds}" + (f"float('{value}')" if binds == "=" else f"'{value}'")
        if value.startswith("'") or re.fullmatch(r"-?\d+(\.\d+)?", value):
            return f"{name}{binds}{value}"
        return f"{name}{binds}'{value}'"

    return _FLAG.sub(keyword, message)
