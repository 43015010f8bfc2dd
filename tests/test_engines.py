"""The engine seam: every statement goes through the engine and its log, and a dry run
lists what a real run executes; the project's list nodes mean the same, and each type reads
as the same kind, on every engine. The SQL a run builds on DuckDB is free of functions
sqlglot cannot translate, and renders for PostgreSQL and Spark (those tests read DuckDB's
trees, and stay on DuckDB).
"""

from __future__ import annotations

import importlib
import pkgutil
import re
import sys
import tempfile
from pathlib import Path

import duckdb
import pandas as pd
import pytest
import sqlglot
from helpers import connected, make_table
from sqlglot import exp
from sqlglot.errors import ErrorLevel

import sbc_sql
from sbc_sql import engines, warehouse
from sbc_sql.compare import compare
from sbc_sql.engines.duckdb import DuckDBEngine
from sbc_sql.names import Name
from sbc_sql.sql import templates
from sbc_sql.sql.dialects.postgres import SbcPostgres
from sbc_sql.sql.dialects.spark import SbcSpark
from sbc_sql.stages import audit
from sbc_sql.stages import verify as verification

TYPES = {
    "pay": "INTEGER",
    "age": "INTEGER",
    "born": "DATE",
    "seen": "TIMESTAMP",
    "sex": "VARCHAR",
    "zip": "VARCHAR",
}
# a name only DuckDB knows, in the SQL text of another engine, is a silent mistranslation
DUCKDB_ONLY = re.compile(
    r"\b(ROWID|LIST_COUNT|LIST_CONTAINS|LIST_APPEND|LIST_CONCAT|LIST_DISTINCT|LIST_TRANSFORM|LIST_SORT|"
    r"LIST_INTERSECT|EPOCH_US|DATE_DIFF|LEN|LIST)\s*\(|ORDER BY ALL|\* (REPLACE|EXCLUDE)",
    re.IGNORECASE,
)
# functions PostgreSQL and Spark have that sqlglot's parser does not know by name
NATIVE = {"postgres": {"CARDINALITY", "ISFINITE"}, "spark": set()}


def people(n: int = 60) -> pd.DataFrame:
    return pd.DataFrame(
        {
            "id": range(n),
            "age": [20 + (i * 7) % 50 if i % 11 else None for i in range(n)],
            "born": [f"19{50 + i % 40}-0{1 + i % 9}-1{i % 9}" if i % 13 else None for i in range(n)],
            "seen": [f"2024-0{1 + i % 9}-1{i % 5} 0{i % 3}:30:00" for i in range(n)],
            "sex": ["F" if i % 3 else "M" for i in range(n)],
            "zip": [f"9{i % 6}" if i % 17 else None for i in range(n)],
            "dis": [f"d{i % 4}" for i in range(n)],
            "pay": [1000 + (i * 37) % 900 for i in range(n)],
        }
    )


@pytest.fixture
def table() -> duckdb.DuckDBPyConnection:
    con = duckdb.connect()
    make_table(con, "t", people(), TYPES)
    return con


def normalized(statements: list[str]) -> list[str]:
    """The statements with the run's random working names made equal, and its provenance
    (whose counts, measures and seconds a dry run does not have) shown as one word."""
    names = [re.sub(r"(sbc_(labels|tuples|source|tmp_\w+?)_)[0-9a-f]{8}", r"\1X", s) for s in statements]
    names = [
        re.sub(r" IS '\{\"schema\":\"sbc-sql/provenance\".*\}';$", " IS <provenance>;", s) for s in names
    ]
    return [
        re.sub(r"'sbc_sql': '\{\"schema\":\"sbc-sql/provenance\".*\}'\}\);$", "'sbc_sql': <provenance>});", s)
        for s in names
    ]


ROLES = {"qi": ["age", "born", "seen", "sex", "zip"], "sensitive": ["dis", "pay"], "drop": ["id"]}


def run(database, *args, **kwargs) -> sbc_sql.Result:
    """A run whose connection (if it opened one) is closed again, and its working views with it."""
    with sbc_sql.anonymize(database, *args, **kwargs) as result:
        return result


def test_the_sql_print_lists_what_a_real_run_executes(engine) -> None:
    database = engine.frame(people(), TYPES)
    shown = run(database, "t", 3, output="r", sql_only=True, **ROLES)
    assert not shown.written
    assert engine.catalog(database) == [("table", "t")]
    real = run(database, "t", 3, output="r", **ROLES)
    assert real.written
    assert normalized(real.statements) == normalized(shown.statements)
    # one list: the statistics, the pull, the class table and the checks of its classes
    text = "\n".join(real.statements)
    for part in ("GROUPING SETS", "q_0", "class_size", "eq_class"):
        assert part in text


@pytest.mark.notimpl(
    ["postgres", "spark"], reason="only DuckDB writes a release to a local file (Capabilities.exports)"
)
def test_the_sql_print_lists_the_writes_and_the_export_of_a_real_run(engine, tmp_path) -> None:
    database = engine.frame(people(), TYPES)
    out = tmp_path / "r.parquet"
    shown = run(database, "t", 3, output="r", sql_only=True, out_file=out, **ROLES)
    assert not shown.written and not out.exists()
    real = run(database, "t", 3, output="r", out_file=out, **ROLES)
    assert real.written and out.is_file()
    assert normalized(real.statements) == normalized(shown.statements)
    # one list: statistics, the pull, the writes, the privacy model and the row checks,
    # measures, names, the provenance, the export
    text = "\n".join(real.statements)
    for part in (
        "GROUPING SETS",
        "CREATE TABLE",
        "class_size",
        "ALTER TABLE",
        "CREATE VIEW",
        "COMMENT ON",
        "COPY",
    ):
        assert part in text
    assert len(real.statements) == 24
    # the provenance on the release view and its two tables, before the export; the run's
    # labelled source dropped last
    assert [s.split(" IS ")[0] for s in normalized(real.statements)[-5:-2]] == [
        'COMMENT ON VIEW "r"',
        'COMMENT ON TABLE "r_rows"',
        'COMMENT ON TABLE "r_classes"',
    ]
    assert normalized(real.statements)[-2].startswith("COPY")
    assert re.match(r'DROP TABLE IF EXISTS "sbc_tmp_r_\w+_labelled"', normalized(real.statements)[-1])


def run_log(con: duckdb.DuckDBPyConnection) -> list[exp.Expression]:
    """Every tree the stages build in a run, a comparison, a verification, a measurement and
    evaluations (categorical and numeric sensitive column; a release that suppressed all)."""
    engine = engines.connect(con)
    sbc_sql.anonymize(engine, "t", 3, output="r", **ROLES)
    # few distinct QI tuples: the tuples are clustered and the rows labelled by a join
    con.execute("CREATE TABLE few AS SELECT age % 3 AS band, sex, zip, dis FROM t")
    sbc_sql.anonymize(engine, "few", 3, output="rt", qi=["band", "sex", "zip"], sensitive=["dis"])
    # a categorical QI of a type an upload would not give back (an ENUM): the class table
    # aggregates its value sets, as on the engines that take no uploaded sets
    con.execute("CREATE TYPE zips AS ENUM (SELECT DISTINCT zip FROM t WHERE zip IS NOT NULL)")
    con.execute("CREATE TABLE coded AS SELECT age, sex, CAST(zip AS zips) AS zip, dis FROM t")
    sbc_sql.anonymize(engine, "coded", 3, output="re", qi=["age", "sex", "zip"], sensitive=["dis"])
    # criteria and a background-knowledge bound (one sensitive column)
    one = {**ROLES, "sensitive": ["dis"], "drop": ["id", "pay"]}
    sbc_sql.anonymize(engine, "t", 3, output="rb", bk_threshold=1.0, max_suppression=0.5, **one)
    # streamed from the database in blocks of a few rows, t-closeness planning their order
    # from a sample
    streamed = {"mode": "streamed", "block_rows": 8, "t_closeness": 0.6, "max_suppression": 0.5}
    sbc_sql.anonymize(engine, "t", 3, output="rs", **streamed, **one)
    # per-column limits on a number, a date, a timestamp and a category, checked in SQL
    limits = {"max_width": "age=30,born=4000,seen=4000", "max_values": "zip=3"}
    sbc_sql.anonymize(engine, "t", 3, output="rl", max_suppression=0.5, **limits, **ROLES)
    sbc_sql.verify(engine, "t", "rl", 3)
    # microaggregated: means of a number and a date and modes of categories, then medians
    # (a timestamp's too) and value sets; each checked by the run and by an auditor
    means = {**ROLES, "qi": ["age", "born", "sex", "zip"], "drop": ["id", "seen"]}
    sbc_sql.anonymize(engine, "t", 3, output="rm", recode="microaggregate", **means)
    sbc_sql.verify(engine, "t", "rm", 3)
    medians = {"aggregate": "median", "aggregate_categorical": "values"}
    sbc_sql.anonymize(engine, "t", 3, output="rmd", recode="microaggregate", **medians, **ROLES)
    # k-map and delta-presence against a population: the people twice over
    twice = "SELECT age, born, seen, sex, zip FROM t"
    con.execute(f"CREATE TABLE pop AS {twice} UNION ALL {twice}")
    against = {"population": "pop", "k_map": 6, "delta_max": 0.9}
    sbc_sql.anonymize(engine, "t", 3, output="rkm", **against, **ROLES)
    sbc_sql.verify(engine, "t", "rkm", 3, **against)
    compare(engine, "t", [4], ["sbca"], **ROLES)
    # class ids for another warehouse, streamed: written from the database, the key checked
    keyed = {**ROLES, "drop": [], "keep": ["id"]}
    with tempfile.TemporaryDirectory() as folder:
        warehouse.cluster_ids(
            con, "t", 3, Path(folder) / "ids.parquet", mode="streamed", row_id="id", **keyed
        )
    sbc_sql.verify(engine, "t", "r", 3)
    # verify joins on one QI or two, as the data decides: render the two-QI join too
    layout = audit.read(engine, "t", "r").layout
    engine.fetch_one(verification.class_values_sql(layout, "t", "r", layout.qis[:2]))
    # a kept column (dis: four values, none of them a QI's code) checked against the QIs, by
    # the run and by verify
    sbc_sql.anonymize(engine, "t", 3, output="rk", **{**ROLES, "sensitive": ["pay"], "keep": ["dis"]})
    sbc_sql.verify(engine, "t", "rk", 3)
    # an incremental release refreshed: new rows placed into published classes (the same rows
    # again), new classes among the rest (older people), and the chain verified
    con.execute("CREATE TABLE grows AS SELECT * FROM t")
    sbc_sql.anonymize(engine, "grows", 3, output="ri", incremental=True, l_diversity=2, **one)
    con.execute(
        "INSERT INTO grows SELECT * FROM t "
        "UNION ALL SELECT id, age + 100, born, seen, sex, zip, dis, pay FROM t"
    )
    sbc_sql.refresh(engine, "ri")
    sbc_sql.verify(engine, "grows", "ri", 3, l_diversity=2)
    sbc_sql.measure(engine, "t", "r")
    sbc_sql.evaluate(engine, "t", "r", sensitive="dis")
    sbc_sql.evaluate(engine, "t", "r", sensitive="pay")
    con.execute('CREATE TABLE "none" AS SELECT * FROM "r" WHERE FALSE')
    sbc_sql.evaluate(engine, "t", "none")
    # a label's classification figures and the rows a model reads (a number, a date, a
    # timestamp and categories, NULLs among them, as features)
    sbc_sql.evaluate(engine, "t", "r", target="dis", model=True, classifier="logistic", queries=0)
    # the risk before release, its combinations and greedy path on the five QIs
    sbc_sql.profile(engine, "t", **ROLES)
    # the risk in the population, by per-record weights: the weights checked, the keys read
    con.execute("CREATE TABLE weighted AS SELECT *, 20.0 + COALESCE(age, 0) % 7 AS w FROM t")
    sbc_sql.profile(engine, "weighted", **ROLES, sample_weights="w")
    # the HTML report: its risk, class-size and diversity queries, and a curve point
    sbc_sql.report(engine, "t", "rb", curve_k=[4])
    assert all(isinstance(s, exp.Expression) for s in engine.log)
    return [s for s in engine.log if isinstance(s, exp.Expression)]


def portable(tree: exp.Expression) -> exp.Expression:
    """The tree with the DuckDB engine's own row id (its one engine-specific column) renamed."""
    return tree.transform(
        lambda n: (
            exp.column("sbc_row_id", table=n.table) if isinstance(n, exp.Column) and n.name == "rowid" else n
        )
    )


def test_no_statement_of_a_run_holds_a_function_sqlglot_cannot_translate(table) -> None:
    for tree in run_log(table):
        assert not list(tree.find_all(exp.Anonymous)), tree.sql(dialect=SbcPostgres)


@pytest.mark.parametrize(("dialect", "name"), [(SbcPostgres, "postgres"), (SbcSpark, "spark")])
def test_every_statement_renders_for_other_engines(table, dialect, name) -> None:
    trees = run_log(table)
    copies = [t for t in trees if isinstance(t, exp.Copy)]
    assert len(copies) == 0  # the export is the engine's own statement; this run has none
    for tree in trees:
        sql = portable(tree).sql(dialect=dialect, unsupported_level=ErrorLevel.RAISE)
        assert not DUCKDB_ONLY.search(sql), sql
        back = sqlglot.parse_one(sql, read=name)
        unknown = {a.name.upper() for a in back.find_all(exp.Anonymous)} - NATIVE[name]
        assert not unknown, (unknown, sql)


def test_the_run_renders_every_template(table, monkeypatch) -> None:
    seen: set[str] = set()
    real = templates.render

    def spy(name, **slots):
        seen.add(name)
        return real(name, **slots)

    monkeypatch.setattr(templates, "render", spy)
    for info in pkgutil.walk_packages(sbc_sql.__path__, "sbc_sql."):
        if not info.name.endswith("__main__"):  # which would run the command line
            importlib.import_module(info.name)
    for name, module in list(sys.modules.items()):
        if name.startswith("sbc_sql.") and getattr(module, "render", None) is real:
            monkeypatch.setattr(module, "render", spy)
    run_log(table)
    on_disk = {p.stem for p in templates.sql_dir().glob("*.sql")}
    assert seen == on_disk


def test_duckdb_renders_the_project_nodes_as_today() -> None:
    values = exp.column("v", table="g")
    from sbc_sql.sql.nodes import list_contains, list_has_null, list_size

    assert list_has_null(values).sql(dialect=DuckDBEngine.dialect) == "LEN(g.v) > LIST_COUNT(g.v)"
    assert list_size(values).sql(dialect=DuckDBEngine.dialect) == "ARRAY_LENGTH(g.v)"
    assert (
        list_contains(values, exp.column("x")).sql(dialect=DuckDBEngine.dialect) == "ARRAY_CONTAINS(g.v, x)"
    )


def test_the_list_nodes_keep_their_meaning_on_every_engine(engine) -> None:
    from sbc_sql.sql.nodes import list_contains, list_has_null, list_size

    lists = exp.column("l")
    rows = sqlglot.parse_one("SELECT ['a', NULL, 'b'] AS l UNION ALL SELECT ['a']", read="duckdb")
    query = exp.select(
        list_has_null(lists), list_size(lists), list_contains(lists, exp.Literal.string("b"))
    ).from_(rows.subquery("t"))
    with connected(engine.fresh()) as eng:
        got = eng.fetch_all(query)
    assert sorted(got) == [(False, 1, False), (True, 3, True)]


def test_an_engine_is_passed_through_and_a_connection_wrapped(engine) -> None:
    database = engine.frame(people(), TYPES)
    wrapped = engines.connect(database)
    assert wrapped.name == engine.name
    assert engines.connect(wrapped) is wrapped
    wrapped.close()
    # what the caller passed in is theirs: closing the engine leaves it open
    assert engine.one(database, "SELECT COUNT(*) FROM t") == (60,)
    default = engines.connect(None)
    assert isinstance(default, DuckDBEngine)
    default.close()


def test_catalog_lookups_are_not_part_of_the_log(engine) -> None:
    with connected(engine.frame(people(), TYPES)) as eng:
        assert eng.object_kinds(["t", "nope"]) == {"t": "TABLE"}
        assert [c.name for c in eng.describe("t").columns][:2] == ["id", "age"]
        assert eng.log == []


@pytest.mark.notimpl(
    ["spark"], reason="Spark writes a release all or nothing by its own steps, not in a transaction"
)
def test_a_failed_commit_rolls_back(engine, monkeypatch) -> None:
    with connected(engine.frame(people(), TYPES)) as eng:

        def refuse() -> None:
            raise RuntimeError("commit refused")

        monkeypatch.setattr(eng, "commit", refuse)
        with pytest.raises(RuntimeError, match="commit refused"), eng.transaction():
            eng.execute(sqlglot.parse_one("CREATE TABLE made_inside (x INTEGER)"))
        assert eng.object_kinds(["made_inside"]) == {}


def test_the_engine_reads_each_type_as_a_kind(engine) -> None:
    # each engine's own types, made by its own SQL: numbers, dates and timestamps are
    # numeric, text and booleans categorical, binary, lists and intervals no QI's
    made = sqlglot.parse_one(
        "CREATE TABLE k AS SELECT CAST(NULL AS DECIMAL(9, 2)) AS n, CAST(NULL AS DATE) AS d, "
        "CAST(NULL AS TIMESTAMP) AS t, CAST(NULL AS VARCHAR) AS s, CAST(NULL AS BOOLEAN) AS b, "
        "CAST(NULL AS BLOB) AS x, CAST(NULL AS INTEGER[]) AS l, CAST(NULL AS INTERVAL) AS i",
        read="duckdb",
    )
    with connected(engine.fresh()) as eng:
        eng.execute(made)
        kinds = {c.name: (c.kind, c.temporal) for c in eng.describe("k").columns}
    assert kinds == {
        "n": ("numeric", None),
        "d": ("numeric", "date"),
        "t": ("numeric", "timestamp"),
        "s": ("categorical", None),
        "b": ("categorical", None),
        "x": (None, None),
        "l": (None, None),
        "i": (None, None),
    }


def test_duckdb_reads_comments_and_identities_of_many_names_as_of_each_alone() -> None:
    # the batched catalog look-ups (one query per place) give what one look-up per name
    # gives: a temporary object before the working schema's, any spelling of a name, a
    # hostile name as one name, nothing for a name that does not exist
    con = duckdb.connect()
    con.execute('CREATE TABLE "Odd ""name"", x" (a INTEGER)')
    con.execute('COMMENT ON TABLE "Odd ""name"", x" IS \'odd\'')
    con.execute("CREATE TABLE shadowed (a INTEGER)")
    con.execute("COMMENT ON TABLE shadowed IS 'main'")
    con.execute("CREATE TEMPORARY TABLE shadowed (a INTEGER)")
    con.execute("CREATE VIEW v AS SELECT 1 AS a")
    con.execute("COMMENT ON VIEW v IS 'view'")
    con.execute("CREATE SCHEMA s")
    con.execute("CREATE TABLE s.q (a INTEGER)")
    con.execute("CREATE TABLE tv (a INTEGER)")
    con.execute("CREATE TEMPORARY VIEW tv AS SELECT 1 AS a")
    eng = DuckDBEngine(con)
    # a temporary object before the working schema's: the temporary view, not the table
    assert eng.object_kinds(["TV", "v", "shadowed", "nope"]) == {
        "TV": "VIEW",
        "v": "VIEW",
        "shadowed": "TABLE",
    }
    assert eng.identities(["tv"]) == {"tv": ("temp", "main", "tv")}
    names = ['Odd "name", x', 'odd "NAME", X', "shadowed", "V", "v", "nope", "'; DROP TABLE v; --"]
    assert eng.comments(names) == {n: eng.comment(n) for n in names}
    assert eng.comments(names)['odd "NAME", X'] == "odd"
    assert eng.comments(names)["V"] == "view"
    assert eng.comments(names)["shadowed"] is None  # the temporary table, which has none
    given = [*names, '"shadowed"', "s.q", "S.Q", "s.nope", "memory.s.q"]
    # each name resolved alone, as SQL resolves it
    alone = {n: eng._resolve(eng.parse_name(n)) for n in given}
    one_by_one = {n: tuple(p.lower() for p in full) for n, full in alone.items() if full is not None}
    assert eng.identities(given) == one_by_one
    assert one_by_one["shadowed"] == ("temp", "main", "shadowed")
    assert one_by_one["s.q"] == one_by_one["S.Q"] == one_by_one["memory.s.q"]
    assert "nope" not in one_by_one and "s.nope" not in one_by_one
    outputs = eng.identities(names, output=True)
    alone = {n: eng._resolve(Name(n)) for n in names}
    assert outputs == {n: tuple(p.lower() for p in full) for n, full in alone.items() if full is not None}
    assert set(outputs) == {'Odd "name", x', 'odd "NAME", X', "shadowed", "V", "v"}
    assert eng.log == []
    con.close()
