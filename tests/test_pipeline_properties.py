"""Properties of anonymize() over generated tables (roles, k-anonymity, NCP).

Every class has at least k rows, every input row is released exactly once (or suppressed),
each class's ranges and sets are exactly its rows' values, 0 <= NCP <= 1 and the SQL NCP
matches both a pandas reference and the numpy twin, and the same input gives the same output.
"""

from __future__ import annotations

import datetime as dt
import math
import re
from collections import Counter
from unittest import mock

import duckdb
import pandas as pd
import pytest
from helpers import as_number, frame, make_table, q
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from strategies import NUMERIC_TYPES, TableCase, tables, tables_and_k

import sbc_sql
from sbc_sql.cluster.ncp import ncp_per_qi, total_ncp
from sbc_sql.errors import InputError
from sbc_sql.run import cluster as pipeline

LEFTOVERS = ("nearest", "last", "suppress")
PROPERTY = settings(
    max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large]
)


class Recorder:
    """Wraps the clustering step to keep the QIData and labels it produced."""

    def __init__(self) -> None:
        self.calls: list[tuple[object, object]] = []
        self.real = pipeline.run_clustering

    def __call__(self, data, *args, **kwargs):
        run = self.real(data, *args, **kwargs)
        self.calls.append((data, run.labels))
        return run


def load(con: duckdb.DuckDBPyConnection, case: TableCase, name: str = "t") -> None:
    make_table(con, name, case.df, case.types)


ALGORITHMS = ["sbca", "sbca-paper"]


def anonymize(con, case: TableCase, k: int, output: str, leftover: str = "nearest", algorithm: str = "sbca"):
    return sbc_sql.anonymize(
        con,
        "t",
        k,
        qi=list(case.qis),
        sensitive=["sid", "dis"],
        output=output,
        leftover=leftover,
        algorithm=algorithm,
    )


def originals(case: TableCase) -> pd.DataFrame:
    """The input as Python values (DATE strings parsed), indexed by sid."""
    df = case.df.copy()
    for c, t in case.types.items():
        if t == "DATE":
            df[c] = [None if v is None else dt.date.fromisoformat(v) for v in df[c]]
    return df.set_index("sid")


def expected_columns(case: TableCase) -> list[str]:
    out = ["eq_class"]
    for c in case.qis:
        out += [f"{c}_min", f"{c}_max", f"{c}_has_null"] if case.types[c] in NUMERIC_TYPES else [c]
    return out + ["sid", "dis"]


def reference_ncp(case: TableCase, rel: pd.DataFrame) -> dict[str, float]:
    """Per-QI NCP computed in pandas from the release rows and the input, by NCP's definition."""
    orig = originals(case)
    n = len(orig)
    suppressed = n - len(rel)
    out: dict[str, float] = {}
    for c in case.qis:
        values = [v for v in orig[c] if v is not None]
        cost = 0.0
        if case.types[c] in NUMERIC_TYPES:
            nums = [as_number(v) for v in values]
            span = (max(nums) - min(nums)) if nums else 0.0
            for lo, hi, has_null in zip(rel[f"{c}_min"], rel[f"{c}_max"], rel[f"{c}_has_null"], strict=True):
                if lo is None:
                    continue
                if has_null:
                    cost += 1.0
                elif span > 0:
                    cost += (as_number(hi) - as_number(lo)) / span
        else:
            card = len(set(values)) + (1 if len(values) < n else 0)
            for vs in rel[c]:
                cost += len(vs) / card if len(vs) > 1 else 0.0
        out[c] = (cost + suppressed) / n
    return out


def check_release(
    con, case: TableCase, k: int, release: str, leftover: str, algorithm: str = "sbca-paper"
) -> pd.DataFrame:
    """Every property of one release against its input; returns the release rows."""
    n = case.n
    orig = originals(case)
    rel = frame(con, f"SELECT * FROM {q(release)}")
    assert list(rel.columns) == expected_columns(case)

    # each input row released at most once, and exactly once unless suppressed
    counts = Counter(rel["sid"])
    assert all(v == 1 for v in counts.values())
    assert set(counts) <= set(orig.index)
    suppressed = n - len(rel)
    if algorithm == "sbca" and leftover == "suppress":
        # fewer than k rows left at the end: n % k of them, or fewer when tuples stay whole
        assert suppressed < k
    else:
        assert suppressed == (n % k if leftover == "suppress" else 0)
    # the released sensitive values are the input's, row for row (a multiset check)
    assert Counter(zip(rel["sid"], rel["dis"], strict=True)) == Counter(
        (sid, orig.at[sid, "dis"]) for sid in rel["sid"]
    )

    # classes: SBCA forms n // k classes of k rows, leftovers go by the chosen mode (the
    # cluster-aware default may then move rows between classes, keeping each >= k); when it
    # clusters distinct tuples (a table that repeats them), a tuple's rows stay together,
    # so a class may hold more than k and there may be fewer classes, numbered 0, 1, ...
    sizes = Counter(rel["eq_class"])
    if algorithm == "sbca":
        assert sorted(sizes) == list(range(len(sizes))) and len(sizes) <= n // k
    else:
        assert sorted(sizes) == list(range(n // k))
    assert min(sizes.values()) >= k
    if leftover == "last" and algorithm == "sbca-paper":
        assert sorted(sizes.values()) == [k] * (n // k - 1) + [k + n % k]
    elif leftover == "suppress":
        assert sum(sizes.values()) == n - suppressed
        assert algorithm == "sbca" or set(sizes.values()) == {k}
    else:
        assert sum(sizes.values()) == n

    # each class generalizes to exactly its rows' values; each row lies inside its class
    for _, group in rel.groupby("eq_class"):
        members = orig.loc[list(group["sid"])]
        for c in case.qis:
            values = list(members[c])
            present = [v for v in values if v is not None]
            if case.types[c] in NUMERIC_TYPES:
                lo, hi, has_null = (group[f"{c}_{s}"].tolist() for s in ("min", "max", "has_null"))
                assert len({*lo}) == len({*hi}) == len({*has_null}) == 1
                assert lo[0] == (min(present) if present else None)
                assert hi[0] == (max(present) if present else None)
                assert has_null[0] == (len(present) < len(values))
                for v in values:
                    assert has_null[0] if v is None else lo[0] <= v <= hi[0]
            else:
                lists = [tuple(v) for v in group[c]]
                assert len(set(lists)) == 1
                want = sorted(set(present)) + ([None] if len(present) < len(values) else [])
                assert list(lists[0]) == want
                for v in values:
                    assert v in lists[0]
    return rel


@pytest.mark.slow
@PROPERTY
@given(tables_and_k(), st.sampled_from(LEFTOVERS), st.sampled_from(ALGORITHMS))
def test_release_properties(case_k, leftover, algorithm):
    case, k = case_k
    con = duckdb.connect()
    load(con, case)
    recorder = Recorder()
    with mock.patch.object(pipeline, "run_clustering", recorder):
        result = anonymize(con, case, k, "rel", leftover, algorithm)
    rel = check_release(con, case, k, "rel", leftover, algorithm)

    assert result.verdict is not None and result.verdict.ok
    verdict = sbc_sql.verify(con, "t", "rel", k)
    assert verdict.ok, verdict.problems
    smallest = min(Counter(rel["eq_class"]).values())
    assert not sbc_sql.verify(con, "t", "rel", smallest + 1).ok

    m = result.measures
    assert m is not None
    assert (m.n_rows, m.released, m.suppressed) == (case.n, len(rel), case.n - len(rel))
    assert 0.0 <= m.total_ncp <= 1.0
    ref = reference_ncp(case, rel)
    for c in case.qis:
        assert m.ncp[c] == pytest.approx(ref[c], abs=1e-9)
    assert m.total_ncp == pytest.approx(sum(ref.values()) / len(ref), abs=1e-9)
    # the SQL measure of the release equals the numpy twin on the labels that made it
    ((data, labels),) = recorder.calls
    assert m.total_ncp == pytest.approx(total_ncp(data, labels), abs=1e-9)
    assert [m.ncp[c] for c in case.qis] == pytest.approx(list(ncp_per_qi(data, labels)), abs=1e-9)
    # measure() on the stored pair agrees with the run's own figures
    again = sbc_sql.measure(con, "t", "rel")
    assert again.total_ncp == pytest.approx(m.total_ncp, abs=1e-12)
    con.close()


@pytest.mark.slow
@settings(PROPERTY, max_examples=15)
@given(tables_and_k(max_rows=40), st.sampled_from(LEFTOVERS), st.sampled_from(ALGORITHMS))
def test_same_input_same_release(case_k, leftover, algorithm):
    case, k = case_k
    con = duckdb.connect()
    load(con, case)
    first = anonymize(con, case, k, "r1", leftover, algorithm)
    second = anonymize(con, case, k, "r2", leftover, algorithm)
    assert (
        con.execute("SELECT * FROM r1 ORDER BY ALL").fetchall()
        == con.execute("SELECT * FROM r2 ORDER BY ALL").fetchall()
    )
    # the stored order is part of "byte for byte": by class, never the input's order
    assert con.execute("SELECT * FROM r1").fetchall() == con.execute("SELECT * FROM r2").fetchall()
    classes = [r[0] for r in con.execute("SELECT eq_class FROM r1").fetchall()]
    assert classes == sorted(classes)
    assert first.measures == second.measures
    con.close()


@settings(PROPERTY, max_examples=10)
@given(tables(min_rows=1, max_rows=5), st.integers(min_value=6, max_value=9))
def test_k_above_row_count_is_refused(case, k):
    con = duckdb.connect()
    load(con, case)
    expected = (
        "has 1 row; a class of k >= 2 rows needs at least 2"
        if case.n == 1
        else f"k={k} is larger than the {case.n} rows"
    )
    with pytest.raises(InputError, match=re.escape(expected)):
        anonymize(con, case, k, "rel")
    assert con.execute("SELECT count(*) FROM duckdb_tables() WHERE table_name <> 't'").fetchone() == (0,)
    con.close()


# 23 rows, k = 5: 4 classes and 3 leftover rows, so the three modes differ
FIXED = TableCase(
    pd.DataFrame(
        {
            "a": pd.Series([i % 7 if i % 5 else None for i in range(23)], dtype=object),
            "e": pd.Series([["x", "y", "z", None][i % 4] for i in range(23)], dtype=object),
            "sid": pd.Series(range(23), dtype=object),
            "dis": pd.Series([["flu", "cold"][i % 2] for i in range(23)], dtype=object),
        }
    ),
    {"a": "INTEGER", "e": "VARCHAR", "sid": "INTEGER", "dis": "VARCHAR"},
    ("a", "e"),
)


@pytest.mark.parametrize("leftover", LEFTOVERS)
def test_leftover_modes_on_a_fixed_table(con, leftover):
    load(con, FIXED)
    result = anonymize(con, FIXED, 5, "rel", leftover, "sbca-paper")
    rel = check_release(con, FIXED, 5, "rel", leftover, "sbca-paper")
    m = result.measures
    assert m is not None
    released = len(rel)
    assert released + m.suppressed == FIXED.n
    assert (released, m.suppressed) == ((20, 3) if leftover == "suppress" else (23, 0))
    assert m.classes == 4
    if leftover == "suppress":
        # a suppressed row costs 1 on every QI, so NCP is at least its share
        assert m.total_ncp >= 3 / 23
    verdict = sbc_sql.verify(con, "t", "rel", 5)
    assert verdict.ok, verdict.problems
    assert verdict.facts["suppressed"] == m.suppressed


def test_leftover_modes_differ(con):
    load(con, FIXED)
    for mode in LEFTOVERS:
        anonymize(con, FIXED, 5, f"rel_{mode}", mode)
    sizes = {
        mode: sorted(
            r[0] for r in con.execute(f"SELECT count(*) FROM rel_{mode} GROUP BY eq_class").fetchall()
        )
        for mode in LEFTOVERS
    }
    assert sizes["last"] == [5, 5, 5, 8]
    assert sizes["suppress"] == [5, 5, 5, 5]
    assert sum(sizes["nearest"]) == 23


def test_ncp_is_finite_and_bounded_on_a_constant_table(con):
    case = TableCase(
        pd.DataFrame(
            {
                "a": pd.Series([3] * 6, dtype=object),
                "e": pd.Series(["x"] * 6, dtype=object),
                "sid": pd.Series(range(6), dtype=object),
                "dis": pd.Series(["flu"] * 6, dtype=object),
            }
        ),
        {"a": "INTEGER", "e": "VARCHAR", "sid": "INTEGER", "dis": "VARCHAR"},
        ("a", "e"),
    )
    load(con, case)
    m = anonymize(con, case, 2, "rel").measures
    assert m is not None and m.total_ncp == 0.0 and not math.isnan(m.total_ncp)


@settings(max_examples=4, deadline=None, suppress_health_check=list(HealthCheck))
@given(case_k=tables_and_k(max_rows=40), algorithm=st.sampled_from(["sbca", "sbca-paper"]))
@pytest.mark.notimpl(["spark"], reason="check_release reads the release in DuckDB's or PostgreSQL's SQL")
def test_each_engine_releases_what_the_reference_says(engine, case_k, algorithm) -> None:
    """On either engine: the release's rows, classes and value sets are its input's (checked in
    Python), the statistics and NCP figures equal a pandas reference and the numpy twin of the
    labels, and verification accepts it at k and refuses it above its smallest class."""
    case, k = case_k
    database = engine(case)
    recorder = Recorder()
    run = sbc_sql.anonymize
    with (
        mock.patch.object(pipeline, "run_clustering", recorder),
        run(
            database, "t", k, qi=list(case.qis), sensitive=["sid", "dis"], output="rel", algorithm=algorithm
        ) as result,
    ):
        pass  # the connection the run opened (a URL's) is closed again
    rel = check_release(database, case, k, "rel", "nearest", algorithm)
    m = result.measures
    assert result.verdict.ok and (m.n_rows, m.released, m.suppressed) == (case.n, len(rel), 0)
    ref = reference_ncp(case, rel)
    assert m.ncp == pytest.approx(ref, abs=1e-9)
    ((data, labels),) = recorder.calls
    assert m.total_ncp == pytest.approx(total_ncp(data, labels), abs=1e-9)
    assert sbc_sql.verify(database, "t", "rel", k).ok
    assert not sbc_sql.verify(database, "t", "rel", min(Counter(rel["eq_class"]).values()) + 1).ok
    assert sbc_sql.measure(database, "t", "rel").total_ncp == pytest.approx(m.total_ncp, abs=1e-12)
