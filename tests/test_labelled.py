"""A run joins its source to its labels once: the labelled source (sql/templates/labelled.sql)
that the write and every check of the verification read, dropped when the run ends,
however it ends."""

from __future__ import annotations

import pandas as pd
import pytest
import sqlglot
from sqlglot import exp

import sbc_sql
from sbc_sql import engines
from sbc_sql.errors import VerificationError
from sbc_sql.stages import verify
from sbc_sql.stages.verify import Verdict


def people(n: int = 240) -> pd.DataFrame:
    return pd.DataFrame(
        {
            "age": [20 + (i * 7) % 50 for i in range(n)],
            "zip": [f"z{(i * 3) % 11}" for i in range(n)],
            "dis": [f"d{i % 4}" for i in range(n)],
            "pay": [1000 + i % 7 for i in range(n)],
        }
    )


ROLES = {"qi": ["age", "zip"], "sensitive": ["dis"], "keep": ["pay"], "output": "rel"}


def parsed(engine: engines.Engine) -> list[exp.Expression]:
    """The engine's log, parsed."""
    return [sqlglot.parse_one(statement, read=engine.dialect) for statement in engine.statements()]


def made_here(tree: exp.Expression) -> str | None:
    """The table a CREATE TABLE ... AS (Spark: CACHE TABLE ... AS) makes."""
    if isinstance(tree, (exp.Create, exp.Cache)) and isinstance(tree.this, exp.Table):
        return tree.this.name
    return None


def labelled_names(engine: engines.Engine) -> list[str]:
    """The labelled sources the engine's log made."""
    return [n for n in map(made_here, parsed(engine)) if n is not None and n.endswith("_labelled")]


def joins_of_source_and_labels(engine: engines.Engine) -> list[exp.Expression]:
    """The statements of the engine's log that join the run's source (the table its
    labelled source reads as s: an engine may read the input under a name of its own) to
    the run's labels."""
    trees = parsed(engine)
    (create,) = [t for t in trees if (made_here(t) or "").endswith("_labelled")]
    (source,) = [t.name for t in create.find_all(exp.Table) if t.alias == "s"]
    found = []
    for tree in trees:
        names = {t.name for t in tree.find_all(exp.Table)}
        labels = [n for n in names if n.startswith("sbc_labels_") and not n.endswith("_beliefs")]
        if source in names and labels and any(True for _ in tree.find_all(exp.Join)):
            found.append(tree)
    return found


def reads_of(engine: engines.Engine, made: str) -> int:
    """The statements of the log that read ``made`` (neither make nor drop it)."""
    return sum(
        1
        for tree in parsed(engine)
        if made_here(tree) != made
        and not isinstance(tree, exp.Drop)
        and made in {t.name for t in tree.find_all(exp.Table)}
    )


@pytest.mark.parametrize("criteria", [{}, {"l_diversity": 2}], ids=["k", "k+l"])
def test_a_run_joins_its_source_to_its_labels_once(engine, criteria) -> None:
    eng = engines.connect(engine.frame(people()))
    try:
        result = sbc_sql.anonymize(eng, "t", 4, **ROLES, **criteria)
        assert result.verdict is not None and result.verdict.ok
        # one statement joins the source to the labels: the labelled source, made once
        (joined,) = joins_of_source_and_labels(eng)
        (made,) = labelled_names(eng)
        assert made_here(joined) == made
        # read by the class and row tables, the class checks, the label coverage and the
        # rows' comparison; dropped at the end
        assert reads_of(eng, made) == 5
        assert not eng.table_exists(made)
    finally:
        eng.close()


def test_a_dry_run_shows_the_labelled_source_and_what_reads_it(engine) -> None:
    eng = engines.connect(engine.frame(people()))
    try:
        sbc_sql.anonymize(eng, "t", 4, **ROLES, sql_only=True)
        (made,) = labelled_names(eng)
        assert len(joins_of_source_and_labels(eng)) == 1
        assert reads_of(eng, made) == 5
        assert not eng.table_exists(made)
    finally:
        eng.close()


def failed(*args, **kwargs) -> Verdict:
    return Verdict(4, ("planted problem",))


def interrupted(*args, **kwargs) -> Verdict:
    raise KeyboardInterrupt


@pytest.mark.parametrize(
    ("replaced", "raised"),
    [(failed, VerificationError), (interrupted, KeyboardInterrupt)],
    ids=["fails", "ctrl-c"],
)
def test_a_run_that_stops_leaves_no_labelled_source(engine, monkeypatch, replaced, raised) -> None:
    database = engine.frame(people())
    eng = engines.connect(database)
    try:
        # the working schema's tables and views, DuckDB's temporary ones included
        before = engine.catalog(database) if engine.name == "duckdb" else None
        monkeypatch.setattr(verify, "verify_with_labels", replaced)
        with pytest.raises(raised):
            sbc_sql.anonymize(eng, "t", 4, **ROLES)
        (made,) = labelled_names(eng)
        assert not eng.table_exists(made)
        assert not eng.table_exists("rel")
        if before is not None:
            assert engine.catalog(database) == before
    finally:
        eng.close()
