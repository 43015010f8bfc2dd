"""The Python side of the dbt package (``dbt/sbc_sql``) on dbt-duckdb.

dbt-duckdb runs Python in the dbt process, on a cursor of the project's DuckDB database: the
package's ``sbc_release`` materialization hands :func:`build` the model (its compiled query,
where it goes, its ``sbc`` config), which makes the model's input table from the query and
writes the release over it with :func:`sbc_sql.anonymize` (``replace=True``): the model's
relation is the release view, its provenance the comment sbc-sql writes.

A dbt test is SQL, so the package's generic test ``sbc_verified`` calls the scalar function
``sbc_verify(original, release, options)``, which :class:`Plugin` (a dbt-duckdb plugin, named
in the profile) registers on the connection: :func:`sbc_sql.verify` of the release against
its input, its JSON document back, as ``sbc.verify`` answers on PostgreSQL.

The model's options arrive as JSON, so each is checked here against what the materialization
lets a model choose (:data:`OWNED` it decides itself) before anything is written.
"""

from __future__ import annotations

import contextlib
import inspect
import json
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

import duckdb
from sqlglot import exp

from . import documents, provenance
from .api import verify
from .errors import InputError, SbcError
from .model import ledger_objects_of
from .plan import catalogue
from .privacy.criteria import Criteria, recorded_criteria
from .run import anonymize
from .run.refresh import refresh
from .sql.templates import ident

#: what the materialization decides, never a model's option: where the release goes, that
#: it replaces the last build's, and what would write the release anywhere else
OWNED = frozenset(
    {
        "output",
        "replace",
        "out_file",
        "sql_only",
        "attach",
        "target_db",
        "engine",
        "memory_limit",
        "csv_delimiter",
        "csv_header",
        "log",
        "progress",
        "trace",
    }
)

#: the suffix of the table the model's query is written to, the release's source
INPUT_SUFFIX = "__sbc_input"

#: the suffix the last build's input is kept under while a build runs
PREVIOUS_SUFFIX = "__sbc_previous"


def build_options() -> tuple[str, ...]:
    """The options a model's ``sbc`` config may give on dbt-duckdb: ``k`` and every keyword
    of :func:`sbc_sql.anonymize` the materialization does not own, with the criteria's."""
    keywords = [
        p.name
        for p in inspect.signature(anonymize).parameters.values()
        if p.kind is inspect.Parameter.KEYWORD_ONLY and p.name not in OWNED
    ]
    return ("k", *keywords, *(o.name for o in catalogue.CRITERIA_OPTIONS))


@dataclass(frozen=True)
class Model:
    """A model the materialization builds: its compiled query, its database, schema and
    relation name, and its ``sbc`` config."""

    sql: str
    database: str
    schema: str
    identifier: str
    options: Mapping[str, Any]
    #: dbt's --full-refresh: an incremental release is made anew rather than refreshed
    full_refresh: bool = False

    @classmethod
    def of(cls, payload: Mapping[str, Any]) -> Model:
        options = payload.get("options") or {}
        if not isinstance(options, Mapping):
            raise InputError(
                f"model '{payload['identifier']}': its sbc config is not a mapping; give "
                "config(sbc={'k': 5, 'qi': ['age', 'zip']})"
            )
        return cls(
            payload["sql"],
            payload["database"],
            payload["schema"],
            payload["identifier"],
            options,
            bool(payload.get("full_refresh")),
        )

    @property
    def input(self) -> str:
        return self.identifier + INPUT_SUFFIX

    def qualified(self, name: str) -> str:
        """``name`` in the model's schema, as sbc-sql reads a name."""
        return quoted(self.schema) + "." + quoted(name)

    @property
    def previous(self) -> str:
        return self.identifier + PREVIOUS_SUFFIX

    def checked(self) -> tuple[int, dict[str, Any]]:
        """k and the other options, each one a model may give (an InputError naming the
        first that is not)."""
        allowed = build_options()
        for name in self.options:
            if name not in allowed:
                raise InputError(
                    f"model '{self.identifier}': '{name}' is not an option of its sbc config on "
                    f"dbt-duckdb; give one of {', '.join(allowed)}"
                )
        k = self.options.get("k")
        if not isinstance(k, int) or isinstance(k, bool):
            raise InputError(f"model '{self.identifier}': its sbc config has no k; give e.g. sbc={{'k': 5}}")
        return k, {n: v for n, v in self.options.items() if n != "k"}


def quoted(name: str) -> str:
    """A name as sbc-sql reads one (:mod:`sbc_sql.names`): double-quoted, so that a dot or a
    quote in it stays one name."""
    return '"' + name.replace('"', '""') + '"'


def _sql(tree: exp.Expression) -> str:
    return tree.sql(dialect="duckdb")


def _table(name: str) -> exp.Table:
    return exp.Table(this=ident(name))


def _exists(con: duckdb.DuckDBPyConnection, name: str) -> bool:
    found = con.execute(
        "SELECT count(*) FROM duckdb_tables() WHERE database_name = current_database() "
        "AND schema_name = current_schema() AND table_name = $name",
        {"name": name},
    ).fetchone()
    return bool(found and found[0])


def _rename(con: duckdb.DuckDBPyConnection, old: str, new: str) -> None:
    con.execute(_sql(exp.Alter(this=_table(old), kind="TABLE", actions=[exp.AlterRename(this=_table(new))])))


def _drop(con: duckdb.DuckDBPyConnection, name: str) -> None:
    con.execute(_sql(exp.Drop(tables=[_table(name)], kind="TABLE", exists=True)))


@contextlib.contextmanager
def _transaction(con: duckdb.DuckDBPyConnection) -> Iterator[None]:
    con.execute("BEGIN TRANSACTION")
    try:
        yield
        con.execute("COMMIT")
    except BaseException:
        with contextlib.suppress(duckdb.Error):
            con.execute("ROLLBACK")
        raise


@contextlib.contextmanager
def value_free() -> Iterator[None]:
    """sbc-sql's own errors as they are (they quote no value); any other, which may quote the
    data, by its type alone."""
    try:
        yield
    except SbcError as err:
        raise ValueError(f"Error: {err}") from None
    except Exception as err:
        raise RuntimeError(
            f"sbc-sql failed with {type(err).__name__} (its text is not shown, as it may quote the "
            "data); run the same with the sbc-sql command to see more"
        ) from None


def build(session: Any, payload: Mapping[str, Any]) -> dict[str, Any]:
    """Build the model: its query written to ``<model>__sbc_input``, and the release of that
    table written as ``<model>`` (the view sbc-sql writes, over ``<model>_classes`` and
    ``<model>_rows``), replacing the last build's. The last build's input is kept until the
    new release is written, and put back if it is not, so that a failed build leaves the
    last release beside the input it was made from. Returns the run's summary.

    ``session``: what dbt-duckdb hands a Python job (a DuckDB connection, or its wrapper of
    one); the build runs on a cursor of its own of the same database."""
    model = Model.of(payload)
    k, options = model.checked()
    con = session.cursor()
    try:
        return _built(con, model, k, options)
    finally:
        con.close()


def _built(con: duckdb.DuckDBPyConnection, model: Model, k: int, options: dict[str, Any]) -> dict[str, Any]:
    con.execute(_sql(exp.Use(this=exp.Table(this=ident(model.schema), db=ident(model.database)))))
    had = _exists(con, model.input)
    with _transaction(con):
        _drop(con, model.previous)
        if had:
            _rename(con, model.input, model.previous)
        con.execute(f"CREATE TABLE {_sql(_table(model.input))} AS ({model.sql})")
    try:
        with value_free():
            source, output = model.qualified(model.input), model.qualified(model.identifier)
            if _refreshes(con, model, k, options):
                summary = documents.refresh_dict(refresh(con, output))
            else:
                release = anonymize(con, source, k, output=output, replace=True, **options)
                with release:
                    summary = documents.summary_dict(release)
    except BaseException:
        with _transaction(con):
            _drop(con, model.input)
            if had:
                _rename(con, model.previous, model.input)
        raise
    _drop(con, model.previous)
    return summary


#: what a model's sbc config asks that an incremental release records and keeps: the release
#: is refreshed only while the config asks the same (else --full-refresh makes it anew)
KEPT = ("qi", "sensitive", "drop", "keep")


def _refreshes(con: duckdb.DuckDBPyConnection, model: Model, k: int, options: Mapping[str, Any]) -> bool:
    """Whether the build refreshes the model's release (an incremental one, built before,
    and no --full-refresh) rather than writing it anew; a config that no longer asks what
    the release keeps is an InputError naming the first difference."""
    if not options.get("incremental") or model.full_refresh:
        return False
    if not _exists(con, ledger_objects_of(model.identifier)[0]):
        return False
    found = con.execute(
        "SELECT comment FROM duckdb_views() WHERE database_name = current_database() "
        "AND schema_name = current_schema() AND view_name = $name",
        {"name": model.identifier},
    ).fetchone()
    recorded = provenance.parse(found[0] if found else None)
    if recorded is None or "versions" not in recorded.document:
        return False
    doc = recorded.document
    criteria = Criteria(**{n: v for n, v in options.items() if n in _criteria()})
    recorded_asked = Criteria(**recorded_criteria(doc))
    asked: dict[str, Any] = {"k": k, "criteria": criteria.describe() if criteria.asked else "none"}
    kept: dict[str, Any] = {
        "k": recorded.k,
        "criteria": recorded_asked.describe() if recorded_asked.asked else "none",
    }
    for role in KEPT:
        if role in options:
            given = options[role]
            asked[role] = sorted([given] if isinstance(given, str) else given)
            kept[role] = sorted(doc.get("options", {}).get(role, []))
    for name, value in asked.items():
        if value != kept.get(name):
            raise InputError(
                f"model '{model.identifier}': its sbc config asks {name} {json.dumps(value)}, its "
                f"incremental release keeps {json.dumps(kept.get(name))}; build it anew with dbt build "
                "--full-refresh"
            )
    return True


def _criteria() -> set[str]:
    return {o.name for o in catalogue.CRITERIA_OPTIONS}


def verify_json(con: duckdb.DuckDBPyConnection, original: str, release: str, options: str) -> str:
    """``sbc_verify``'s answer: the JSON document of :func:`sbc_sql.verify` of ``release``
    against ``original`` on a cursor of its own (the calling query's connection is busy),
    ``options`` a JSON object holding k and the rest of verify's keywords."""
    asked = json.loads(options)
    if not isinstance(asked, dict) or not isinstance(asked.get("k"), int):
        raise InputError("sbc_verify: its options hold no k; give '{\"k\": 5}'")
    k = asked.pop("k")
    # what only the build takes (the algorithm, the leftovers, ...) is no question of verify's
    taken = set(inspect.signature(verify).parameters) | {o.name for o in catalogue.CRITERIA_OPTIONS}
    build_only = set(build_options()) - taken
    asked = {name: value for name, value in asked.items() if name not in build_only}
    cursor = con.cursor()
    try:
        return json.dumps(documents.verify_dict(verify(cursor, original, release, k, **asked)))
    finally:
        cursor.close()


class Plugin:
    """The dbt-duckdb plugin of the package (``plugins: [{module: sbc_sql.dbt_duckdb}]`` in
    the profile): registers ``sbc_verify`` on each connection dbt-duckdb opens. dbt-duckdb
    takes any class of this shape as a plugin; none of its own is imported."""

    def __init__(self, name: str, plugin_config: Mapping[str, Any], credentials: Any = None) -> None:
        self.name = name
        self.creds = credentials

    def update_connection_config(self, creds: Any, config: dict[str, Any]) -> None:
        """Nothing of the connection's configuration changes."""

    def configure_connection(self, conn: duckdb.DuckDBPyConnection) -> None:
        def sbc_verify(original: str, release: str, options: str) -> str:
            with value_free():
                return verify_json(conn, original, release, options)

        conn.create_function("sbc_verify", sbc_verify, ["VARCHAR"] * 3, "VARCHAR", side_effects=True)

    def configure_cursor(self, cursor: duckdb.DuckDBPyConnection) -> None:
        """A cursor shares its connection's functions."""
