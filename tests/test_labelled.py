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


def joins_of_source_and_labels(engine: engines.Engine, source: str) -> list[exp.Expression]:
    """The statements of the engine's log that join ``source`` to the run's labels."""
    found = []
    for statement in engine.statements():
        tree = sqlglot.parse_one(statement, read=engine.dialect)
        names = {t.name for t in tree.find_all(exp.Table)}
        labels = [n for n in names if n.startswith("sbc_labels_") and not n.endswith("_beliefs")]
        if source in names and labels and any(True for _ in tree.find_all(exp.Join)):
            found.append(tree)
    return found


def labelled_names(engine: engines.Engine) -> list[str]:
    """The labelled sources the engine's log made."""
    names = []
    for statement in engine.statements():
        tree = sqlglot.parse_one(statement, read=engine.dialect)
        if isinstance(tree, exp.Create) and tree.this.name.endswith("_labelled"):
            names.append(tree.this.name)
    return names


@pytest.mark.parametrize("criteria", [{}, {"l_diversity": 2}], ids=["k", "k+l"])
def test_a_run_joins_its_source_to_its_labels_once(engine, criteria) -> None:
    eng = engines.connect(engine.frame(people()))
    try:
        result = sbc_sql.anonymize(eng, "t", 4, **ROLES, **criteria)
        assert result.verdict is not None and result.verdict.ok
        joined = joins_of_source_and_labels(eng, "t")
        # one statement: the labelled source, which the class table, the row table and the
        # checks read
        assert len(joined) == 1
        assert isinstance(joined[0], exp.Create) and joined[0].this.name.endswith("_labelled")
        (made,) = labelled_names(eng)
        reads = [s for s in eng.statements() if made in s]
        # made, read by the class and row tables, the class checks, the label coverage and
        # the rows' comparison, then dropped
        assert len(reads) == 7
        assert not eng.table_exists(made)
    finally:
        eng.close()


def test_a_dry_run_shows_the_labelled_source_and_what_reads_it(engine) -> None:
    eng = engines.connect(engine.frame(people()))
    try:
        sbc_sql.anonymize(eng, "t", 4, **ROLES, sql_only=True)
        (made,) = labelled_names(eng)
        assert len(joins_of_source_and_labels(eng, "t")) == 1
        assert sum(made in s for s in eng.statements()) == 7
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
