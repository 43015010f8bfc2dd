"""The SQL helpers an analyst loads to query a release: for a range or a set of values, the
rows surely inside it (a lower bound of the true count), the rows that may be (an upper
bound), and the uniform-spread estimate ``evaluate``'s query error measures
(``sql/helpers/<dialect>.sql``; docs/querying.md shows them at work)."""

from __future__ import annotations

from .errors import InputError
from .sql import templates
from .sql.templates import sql_root

#: the dialects the helpers are written for: DuckDB macros, PostgreSQL SQL functions
DIALECTS = ("duckdb", "postgres")


def query_helpers(dialect: str = "duckdb") -> str:
    """The statements that create the query helpers in ``dialect`` (duckdb: macros, kept in
    the database file; postgres: plain SQL functions in the first schema of the search
    path), to run once in the database that holds the release."""
    if dialect not in DIALECTS:
        raise InputError(
            f"dialect='{dialect}' has no query helpers; give one of {', '.join(DIALECTS)} "
            "(on Spark, write the expressions of docs/querying.md in the query)"
        )
    return (sql_root() / "helpers" / f"{dialect}.sql").read_text(encoding="utf-8")


def statements(dialect: str = "duckdb") -> list[str]:
    """:func:`query_helpers` one statement at a time, comments left out (for a driver that
    runs one statement per call)."""
    return templates.statements(query_helpers(dialect))
