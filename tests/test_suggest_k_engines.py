"""suggest-k on PostgreSQL and on Spark: the k and the curve DuckDB finds on the same rows, and
nothing of a trial left behind (on PostgreSQL each trial is rolled back; on Spark, which has
no transactional DDL, a trial writes no release at all: its tables are the session's
temporary views, dropped with it, and only a commit writes files or catalog tables).

The curves are compared k for k. On Spark the rows are clustered in the driver when the
criteria ask for it (l-diversity here), and otherwise in Spark's workers, in blocks cut from
a sample of the rows; the table here fits in one block, so no row is left out of the cut
and the workers' classes are the driver's: both curves equal DuckDB's."""

from __future__ import annotations

import json
from pathlib import Path

import duckdb
import numpy as np
import pandas as pd
import pytest
from helpers import assert_same_measures, pg_rows, run_cli, to_postgres

import sbc_sql
from sbc_sql.quality.suggest import Suggestion, suggest_k

QI = "age,zip,sex"
ROLES = {"qi": QI, "keep": "dx"}
CLI_ROLES = ["--qi", QI, "--keep", "dx"]


def people(n: int) -> pd.DataFrame:
    """n people over two numeric QIs and a categorical one, and a diagnosis."""
    rng = np.random.default_rng(7)
    return pd.DataFrame(
        {
            "age": rng.integers(18, 90, n),
            "zip": rng.integers(10000, 10100, n),
            "sex": rng.choice(["F", "M"], n),
            "dx": rng.choice(["a", "b", "c", "d"], n),
        }
    )


def duck_people(n: int) -> duckdb.DuckDBPyConnection:
    con = duckdb.connect()
    con.register("frame", people(n))
    con.execute("CREATE TABLE people AS SELECT * FROM frame")
    con.unregister("frame")
    return con


def assert_same_search(got: Suggestion, want: Suggestion) -> None:
    """The same k chosen, the same k tried in the same order, and each k's figures."""
    assert (got.k, got.next_k, got.limit, got.at_limit) == (want.k, want.next_k, want.limit, want.at_limit)
    assert [s.k for s in got.steps] == [s.k for s in want.steps]
    for g, w in zip(got.curve, want.curve, strict=True):
        assert (g.under, g.classes, g.smallest, g.released, g.suppressed) == (
            w.under,
            w.classes,
            w.smallest,
            w.released,
            w.suppressed,
        ), g.k
        assert g.ncp == pytest.approx(w.ncp, abs=1e-9), g.k


# ---- PostgreSQL ----


def pg_objects(url: str) -> list[tuple[str, str]]:
    """Every table, view and sequence of the database, temporary ones of any connection
    included (a trial's working tables are the connection's temporary tables)."""
    return sorted(
        (str(schema).removeprefix("pg_").split("_")[0], str(name))
        for schema, name in pg_rows(
            url,
            "SELECT n.nspname, c.relname FROM pg_class AS c JOIN pg_namespace AS n "
            "ON n.oid = c.relnamespace WHERE c.relkind IN ('r', 'v', 'm', 'p', 'f', 'S') "
            "AND n.nspname NOT IN ('pg_catalog', 'information_schema') "
            "AND n.nspname NOT LIKE 'pg_toast%'",
        )
    )


def test_postgres_finds_duckdbs_k_and_curve_leaves_nothing_and_applies_anonymizes_release(
    postgres_url,
) -> None:
    duck = duck_people(400)
    to_postgres(duck, "people", postgres_url)
    before = pg_objects(postgres_url)
    assert before == [("public", "people")]
    between: list[list[tuple[str, str]]] = []
    on_duck = suggest_k(duck, "people", max_loss=0.1, **ROLES)
    on_pg = suggest_k(
        postgres_url,
        "people",
        max_loss=0.1,
        on_step=lambda _: between.append(pg_objects(postgres_url)),
        **ROLES,
    )
    assert_same_search(on_pg, on_duck)
    assert len(on_pg.steps) >= 4 and not on_pg.at_limit
    # each trial rolled back before the next began (temporary tables included), and nothing
    # left once the search is over
    assert between == [before] * len(on_pg.steps)
    assert pg_objects(postgres_url) == before
    # with the criteria too (the sensitive column's distribution is read in PostgreSQL)
    criteria = {"qi": QI, "sensitive": "dx", "l_diversity": 2}
    assert_same_search(
        suggest_k(postgres_url, "people", max_loss=0.1, **criteria),
        suggest_k(duck, "people", max_loss=0.1, **criteria),
    )
    assert pg_objects(postgres_url) == before

    # --apply: the release anonymize writes at that k, verified
    k = on_pg.k
    res = run_cli(
        ["suggest-k", "--db", postgres_url, "-t", "people", *CLI_ROLES, "--max-loss", "0.1", "--apply"]
    )
    assert res.exit_code == 0, res.stderr
    assert f"suggested k = {k} " in res.stdout and f"release written: people_k{k}" in res.stdout
    release = f"people_k{k}"
    made = [f"{release}{suffix}" for suffix in ("", "_classes", "_rows", "_view")]
    assert pg_objects(postgres_url) == sorted([*before, *(("public", m) for m in made)])
    assert sbc_sql.verify(postgres_url, "people", release, k).ok
    with sbc_sql.anonymize(postgres_url, "people", k, output="by_anonymize", **ROLES) as by_anonymize:
        assert by_anonymize.measures is not None
        assert_same_measures(sbc_sql.measure(postgres_url, "people", release), by_anonymize.measures)
        assert by_anonymize.measures.total_ncp == pytest.approx(on_pg.step(k).ncp, abs=1e-9)
    # row for row, class ids included
    for suffix in ("", "_classes"):
        ours = pg_rows(postgres_url, f'SELECT * FROM "{release}{suffix}" ORDER BY 1, 2, 3, 4, 5, 6')
        theirs = pg_rows(postgres_url, f'SELECT * FROM "by_anonymize{suffix}" ORDER BY 1, 2, 3, 4, 5, 6')
        assert ours == theirs and ours


# ---- Spark ----


def spark_state(session, folder: Path, running: bool = False) -> tuple[list[tuple[str, bool]], list[str]]:
    """The Spark catalog (temporary views included; while a search is ``running``, but the
    input it reads and keeps cached until it ends) and every file and folder under ``folder``."""
    tables = sorted(
        (t.name, bool(t.isTemporary))
        for t in session.catalog.listTables()
        if not (running and t.name.startswith("sbc_source_"))
    )
    files = sorted(str(p.relative_to(folder)) for p in folder.rglob("*"))
    return tables, files


@pytest.fixture
def parquet(tmp_path: Path) -> tuple[Path, duckdb.DuckDBPyConnection]:
    """120 people as one Parquet file in a folder of its own, and the same rows in DuckDB."""
    duck = duck_people(120)
    path = tmp_path / "data" / "people.parquet"
    path.parent.mkdir()
    duck.execute(f"COPY people TO '{path}' (FORMAT PARQUET)")
    return path, duck


def test_spark_in_the_driver_finds_duckdbs_k_and_curve_and_no_trial_leaves_anything(spark, parquet) -> None:
    path, duck = parquet
    folder = path.parent
    before = spark_state(spark, folder)
    assert before == ([], ["people.parquet"])
    seen: list[tuple] = []
    # the criteria are weighed in the driver, where the rows are clustered
    options = {"qi": QI, "sensitive": "dx", "l_diversity": 2, "k_max": 4}
    on_spark = suggest_k(
        spark,
        str(path),
        max_loss=0.1,
        on_step=lambda _: seen.append(spark_state(spark, folder, running=True)),
        **options,
    )
    assert_same_search(on_spark, suggest_k(duck, "people", max_loss=0.1, **options))
    assert [s.k for s in on_spark.steps] == [2, 4, 3]  # bracketed, then bisected
    # each trial gone before the next: no view, no catalog table, no file or folder
    assert seen == [before] * 3
    assert spark_state(spark, folder) == before


def test_spark_on_the_command_line_in_the_workers_applies_a_verified_release_and_leaves_nothing_else(
    spark, parquet, monkeypatch
) -> None:
    from sbc_sql.quality import suggest
    from sbc_sql.stages import measure

    path, duck = parquet
    folder = path.parent
    before = spark_state(spark, folder)
    args = ["suggest-k", "--engine", "spark", "-t", path, *CLI_ROLES, "--max-loss", "0.1"]
    args += ["--k-min", "3", "--k-max", "4"]
    # interrupted in the first k's measures: nothing written, nothing left in the session
    measured = measure.measure_tables

    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(measure, "measure_tables", interrupted)
    res = run_cli([*args, "-q"])
    assert res.exit_code == 130
    assert spark_state(spark, folder) == before
    monkeypatch.setattr(measure, "measure_tables", measured)

    # each trial's state once it is over: its labels, kept in the workers' view, gone too
    published = suggest.publish
    seen: list[tuple] = []

    def watched(*args, **kwargs):
        result = published(*args, **kwargs)
        if not kwargs.get("commit", True):
            seen.append(spark_state(spark, folder, running=True))
        return result

    monkeypatch.setattr(suggest, "publish", watched)
    res = run_cli([*args, "--apply", "--json", "-q"])
    assert res.exit_code == 0, res.stderr
    assert seen == [before] * 2
    found = json.loads(res.stdout)
    # one block (120 rows): the workers' blocks are cut from every row, as DuckDB's are
    on_duck = suggest_k(duck, "people", max_loss=0.1, k_min=3, k_max=4, **ROLES)
    assert (found["k"], found["next_k"]) == (on_duck.k, on_duck.next_k) == (3, 4)
    assert [c["ncp"] for c in found["curve"]] == pytest.approx([s.ncp for s in on_duck.curve], abs=1e-9)
    k = found["k"]
    release = folder / f"people_k{k}"
    assert found["applied"] == f"file:{release}"
    # the release and its class table beside the input, nothing else
    tables, files = spark_state(spark, folder)
    assert tables == [] and {f for f in files if "/" not in f} == {
        "people.parquet",
        release.name,
        f"{release.name}_classes",
    }
    assert sbc_sql.verify(spark, str(path), str(release), k).ok
    assert sbc_sql.measure(spark, str(path), str(release)).total_ncp == pytest.approx(found["ncp"], abs=1e-9)
    # the release DuckDB's anonymize makes of the same rows at that k, row for row
    sbc_sql.anonymize(duck, "people", k, output="rel", **ROLES)
    assert (
        duck.execute(f"SELECT * FROM read_parquet('{release}/*.parquet') ORDER BY ALL").fetchall()
        == duck.execute("SELECT * FROM rel ORDER BY ALL").fetchall()
    )
    assert spark_state(spark, folder)[0] == []
