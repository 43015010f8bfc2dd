"""Recursive (c,l)-diversity end to end, from its options as Criteria takes them: a bad
value is one Error line; the default SBCA keeps it while it clusters (on DuckDB and on
PostgreSQL), the release passes its SQL check, and a release made for k alone on the same
skewed column fails it; its measure is the largest r1 / (r_l + ... + r_m) of a class."""

from __future__ import annotations

import duckdb
import numpy as np
import pytest
from helpers import to_postgres

from sbc_sql import engines
from sbc_sql.cluster.registry import ClusterOptions, get
from sbc_sql.errors import InputError
from sbc_sql.model import Column
from sbc_sql.privacy.criteria import Criteria, check_sensitive, models
from sbc_sql.privacy.recursive_diversity import RecursiveDiversity
from sbc_sql.run import make_options
from sbc_sql.run.cluster import cluster
from sbc_sql.run.prepare import prepare
from sbc_sql.run.publish import publish
from sbc_sql.stages import audit

DX = Column("dx", "VARCHAR", "sensitive", kind="categorical")


def _table(con: duckdb.DuckDBPyConnection) -> None:
    """300 rows: two QIs, and a sensitive dx whose most frequent value holds half the rows."""
    rng = np.random.default_rng(7)
    n = 300
    dx = rng.choice(np.array(["flu", "cold", "asthma", "gout", "ulcer"]), n, p=[0.5, 0.2, 0.15, 0.1, 0.05])
    age = rng.integers(20, 80, n)
    zip_ = rng.choice(np.array(["1001", "1002", "1003", "2001", "2002"]), n)
    con.execute("CREATE TABLE t (age INTEGER, zip VARCHAR, dx VARCHAR)")
    con.executemany(
        "INSERT INTO t VALUES (?, ?, ?)", list(zip(age.tolist(), zip_.tolist(), dx.tolist(), strict=True))
    )


def _anonymize(database, criteria: Criteria, output: str):
    engine = engines.connect(database)
    options = make_options(
        5, qi="age,zip", sensitive="dx", output=output, criteria=criteria, max_suppression=0.05
    )
    prepared = prepare(engine, "t", options)
    return engine, publish(prepared, cluster(prepared))


def test_options_are_checked_with_one_error_line() -> None:
    with pytest.raises(InputError, match=r"^--recursive-l 1 is not a whole number of 2 or more; "):
        Criteria(recursive_l=1).check()
    with pytest.raises(InputError, match=r"^--recursive-c 0.0 is not a finite number above 0; "):
        Criteria(recursive_l=2, recursive_c=0.0).check()
    with pytest.raises(InputError, match=r"^--recursive-l 6 is above the 5 distinct value\(s\)"):
        check_sensitive(Criteria(recursive_l=6), [DX], {"dx": 5})
    criteria = Criteria(recursive_l=3)
    criteria.check()
    assert criteria.recursive_c == 2.0  # the default
    assert criteria.describe() == "recursive (c,l)-diversity c=2, l=3"
    assert models(5, criteria, [DX])[1] == RecursiveDiversity(DX, 3, 2.0)
    assert criteria.rule().asked() == {"recursive"}


def test_what_the_whole_input_breaks_is_refused_before_clustering() -> None:
    con = duckdb.connect()
    _table(con)
    with pytest.raises(InputError, match=r"recursive \(c,l\)-diversity c=1.5, l=3 cannot hold on 'dx'"):
        _anonymize(con, Criteria(recursive_l=3, recursive_c=1.5), "r")


@pytest.mark.parametrize(("l_div", "c"), [(2, 2.0), (3, 2.5)])
def test_the_clustering_keeps_it_and_verification_agrees(l_div: int, c: float) -> None:
    con = duckdb.connect()
    _table(con)
    criterion = RecursiveDiversity(DX, l_div, c)
    engine, result = _anonymize(con, Criteria(recursive_l=l_div, recursive_c=c), "r")
    assert result.written and result.verdict.ok, result.verdict.problems
    assert criterion.check(engine, "r", "t") == []
    prov = audit.read(engine, "t", "r").provenance
    assert prov is not None
    recorded = [m for m in prov.document["privacy_models"] if m["name"] == "recursive-diversity"]
    assert recorded == [{"name": "recursive-diversity", "l": l_div, "c": c, "column": "dx"}]
    # the measure: every class's r1 / (r_l + ... + r_m) below c, as the run reports it
    (largest,) = criterion.measure(engine, "r", "t").values()
    assert 0 < largest < c
    assert result.achieved["recursive_c"] == pytest.approx(largest)
    # the same column released for k alone breaks it, in words that name no value
    engine, plain = _anonymize(con, Criteria(), "r_plain")
    assert plain.written
    problems = criterion.check(engine, "r_plain", "t")
    assert len(problems) == 1 and "of 'dx'" in problems[0] and "flu" not in problems[0]


def test_the_arrays_repair_with_rows_of_a_value_not_the_most_frequent() -> None:
    rule = Criteria(recursive_l=2, recursive_c=2.0).rule()
    p = np.full(4, 0.25)
    assert rule.helpful(np.array([2, 1, 0, 0]), 3, p, False).tolist() == [False, True, True, True]
    assert not rule.helpful(np.array([3, 1, 1, 0]), 5, p, False).any()


@pytest.mark.postgres
def test_postgres_keeps_and_verifies_it(postgres_url: str) -> None:
    con = duckdb.connect()
    _table(con)
    to_postgres(con, "t", postgres_url)
    engine, result = _anonymize(postgres_url, Criteria(recursive_l=2, recursive_c=2.0), "r")
    try:
        assert result.written and result.verdict.ok, result.verdict.problems
        assert RecursiveDiversity(DX, 2, 2.0).check(engine, "r", "t") == []
    finally:
        engine.close()


def test_the_registry_runs_it_in_every_mode() -> None:
    """Exact and block mode place every row in a class that keeps it, or suppress it."""
    con = duckdb.connect()
    _table(con)
    criteria = Criteria(recursive_l=3, recursive_c=2.5)
    options = make_options(5, qi="age,zip", sensitive="dx", tuples=False, criteria=criteria)
    data = prepare(engines.connect(con), "t", options).data
    assert data.sensitive is not None
    rule = criteria.rule()
    for mode in ("exact", "blocks"):
        run = get("sbca").run(data, 5, ClusterOptions(mode=mode, rule=rule, max_suppression=0.1))
        labels = run.labels
        used = np.unique(labels[labels >= 0])
        assert rule.classes_ok(labels, data.sensitive)[used].all(), mode
        assert np.bincount(labels[labels >= 0]).min(initial=5) >= 5
