"""The baselines (Mondrian, k-member, Datafly, Incognito) keep l-diversity, t-closeness and
beta-likeness on the sensitive columns: every class they release holds k rows and keeps the
rule, every row is released or suppressed for a reason, suppression stays within the budget
or the run is one error; and where k alone releases a class that is not l-diverse, the rule
repairs it."""

from __future__ import annotations

import dataclasses

import duckdb
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from strategies import criteria_tables, data_from_arrays, rules, sensitive_from_codes

import sbc_sql
from sbc_sql.cluster import registry
from sbc_sql.cluster.baselines.fulldomain import datafly, incognito
from sbc_sql.cluster.baselines.kmember import kmember
from sbc_sql.cluster.baselines.mondrian import mondrian
from sbc_sql.cluster.model import QIData
from sbc_sql.cluster.registry import ClusterOptions
from sbc_sql.cluster.sensitive import REASON_CODES, Rule
from sbc_sql.errors import InputError
from sbc_sql.privacy.criteria import rule_of

BASELINES = ("mondrian", "kmember", "datafly", "incognito")
PROPERTY = settings(max_examples=25, deadline=None)


def check_run(data: QIData, k: int, rule: Rule, budget: float, algorithm: str) -> None:
    """The run's classes hold k rows and keep the rule, its ids are dense, every suppressed
    row has a reason and no released row has one, and suppression fits the budget; or the
    run is the registry's one error for a run over budget."""
    assert data.sensitive is not None
    n = data.n_rows
    try:
        run = registry.get(algorithm).run(data, k, ClusterOptions(rule=rule, max_suppression=budget))
    except InputError as error:
        message = str(error)
    else:
        message = ""
    if message:
        assert "cannot be placed in classes that keep" in message
        return
    labels = run.labels
    assert labels.shape == (n,) and (labels >= -1).all()
    kept = labels[labels >= 0]
    suppressed = labels < 0
    assert int(suppressed.sum()) <= int(budget * n)
    if len(kept):
        sizes = np.bincount(kept)
        assert (sizes >= k).all(), "a class id is empty or holds fewer than k rows"
        assert rule.classes_ok(labels, data.sensitive).all()
    if suppressed.any():
        assert run.reasons is not None
        assert (run.reasons[suppressed] > 0).all() and (run.reasons[~suppressed] == 0).all()
        own = REASON_CODES["budget"] if algorithm in ("datafly", "incognito") else REASON_CODES["unplaced"]
        assert set(run.reasons[suppressed].tolist()) <= {own, REASON_CODES["rare_value"]}


@PROPERTY
@given(criteria_tables(), rules, st.sampled_from([0.0, 0.02, 0.1]))
def test_mondrian_keeps_the_rule(table: tuple[QIData, int], rule: Rule, budget: float) -> None:
    check_run(*table, rule, budget, "mondrian")


@PROPERTY
@given(criteria_tables(), rules, st.sampled_from([0.0, 0.02, 0.1]))
def test_kmember_keeps_the_rule(table: tuple[QIData, int], rule: Rule, budget: float) -> None:
    check_run(*table, rule, budget, "kmember")


@PROPERTY
@given(criteria_tables(), rules, st.sampled_from([0.0, 0.02, 0.1]))
def test_datafly_keeps_the_rule(table: tuple[QIData, int], rule: Rule, budget: float) -> None:
    check_run(*table, rule, budget, "datafly")


@PROPERTY
@given(criteria_tables(), rules, st.sampled_from([0.0, 0.02, 0.1]))
def test_incognito_keeps_the_rule(table: tuple[QIData, int], rule: Rule, budget: float) -> None:
    check_run(*table, rule, budget, "incognito")


def banded() -> QIData:
    """40 rows of ages 0..39; the diagnosis changes every 10 years of age, so near neighbours
    share it: classes of a few close ages hold one diagnosis."""
    data = data_from_arrays([np.arange(40, dtype=np.float64)], [])
    return dataclasses.replace(data, sensitive=sensitive_from_codes([np.arange(40) // 10]))


@pytest.mark.parametrize("algorithm", BASELINES)
def test_the_rule_repairs_what_k_alone_releases(algorithm: str) -> None:
    data, rule = banded(), rule_of(l_diversity=2)
    assert data.sensitive is not None
    options = ClusterOptions(max_suppression=0.0)
    alone = registry.get(algorithm).run(data, 5, options).labels
    assert (alone >= 0).all()
    assert not rule.classes_ok(alone, data.sensitive).all(), "k alone already gives 2-diverse classes"
    kept = registry.get(algorithm).run(data, 5, dataclasses.replace(options, rule=rule)).labels
    assert (kept >= 0).all() and (np.bincount(kept) >= 5).all()
    assert rule.classes_ok(kept, data.sensitive).all()


@pytest.mark.parametrize("algorithm", BASELINES)
def test_a_rule_the_input_cannot_keep_is_one_error(algorithm: str) -> None:
    # two diagnoses cannot make a class 3-diverse: every row is left out, over any budget
    data = dataclasses.replace(banded(), sensitive=sensitive_from_codes([np.arange(40) % 2]))
    with pytest.raises(InputError, match="cannot be placed in classes that keep distinct l-diversity"):
        registry.get(algorithm).run(data, 5, ClusterOptions(rule=rule_of(l_diversity=3), max_suppression=0.1))


def test_every_baseline_says_it_keeps_the_criteria() -> None:
    assert set(BASELINES) <= set(registry.with_criteria())


def test_without_a_rule_the_labels_do_not_change() -> None:
    # an inactive rule takes the k-only path of every baseline (the releases are pinned)
    data = banded()
    assert (mondrian(data, 5, Rule()) == mondrian(data, 5)).all()
    assert (kmember(data, 5, rule=Rule()) == kmember(data, 5)).all()
    assert (datafly(data, 5, rule=Rule()) == datafly(data, 5)).all()
    assert (incognito(data, 5, rule=Rule()) == incognito(data, 5)).all()


def test_kmember_keeps_criteria_in_its_compiled_kernel_only() -> None:
    with pytest.raises(ValueError, match="compiled kernel only"):
        kmember(banded(), 5, engine="numpy", rule=rule_of(l_diversity=2))


def test_mondrian_takes_the_most_balanced_cut_that_keeps_the_rule() -> None:
    # ages 0..7 with diagnoses a b a b c c c c: the median cut leaves c c c c on the right,
    # which is not 2-diverse; of the cuts that keep the rule, after age 2 is the most balanced
    # (3 and 5 rows); then neither half can be cut again
    data = data_from_arrays([np.arange(8, dtype=np.float64)], [])
    data = dataclasses.replace(data, sensitive=sensitive_from_codes([np.array([0, 1, 0, 1, 2, 2, 2, 2])]))
    assert mondrian(data, 2).tolist() == [0, 0, 1, 1, 2, 2, 3, 3]
    assert mondrian(data, 2, rule_of(l_diversity=2)).tolist() == [0, 0, 0, 1, 1, 1, 1, 1]


@pytest.mark.parametrize("algorithm", ["datafly", "incognito"])
def test_full_domain_suppresses_classes_that_break_the_rule_within_the_budget(algorithm: str) -> None:
    # ages by 16 years: [0, 16) and [16, 32) are 2-diverse, [32, 40) holds one diagnosis and
    # its 8 rows fit a budget of 10 rows; by 8 years two classes break the rule (16 rows)
    data = banded()
    run = registry.get(algorithm).run(
        data, 5, ClusterOptions(rule=rule_of(l_diversity=2), max_suppression=0.25)
    )
    assert run.labels.tolist() == [0] * 16 + [1] * 16 + [-1] * 8
    assert run.reasons is not None and set(run.reasons[32:].tolist()) == {REASON_CODES["budget"]}


@pytest.mark.parametrize("algorithm", [mondrian, kmember, datafly, incognito])
def test_fewer_rows_than_k_are_suppressed_under_a_rule_too(algorithm) -> None:
    data = dataclasses.replace(banded().take(np.arange(4)), sensitive=sensitive_from_codes([np.arange(4)]))
    assert (algorithm(data, 5, rule=rule_of(l_diversity=2)) == -1).all()


CRITERIA = [
    {"l_diversity": 3},
    {"l_diversity": 2, "l_model": "entropy"},
    {"t_closeness": 0.3},
    {"beta_likeness": 1.0},
    {"beta_likeness": 0.5, "beta_basic": True},
]


@pytest.fixture(scope="module")
def ward() -> duckdb.DuckDBPyConnection:
    """240 patients whose diagnosis follows their age (5 values, one of them rare)."""
    con = duckdb.connect()
    con.execute(
        "CREATE TABLE t AS SELECT 20 + (i * 37) % 60 AS age, ['F', 'M'][1 + i % 2] AS sex, "
        "'z' || (i % 7) AS zip, CASE WHEN i % 40 = 0 THEN 'dx4' "
        "ELSE 'dx' || (((i * 37) % 60) // 16) END AS dx FROM range(240) AS r(i)"
    )
    yield con
    con.close()


@pytest.mark.parametrize("criteria", CRITERIA, ids=lambda c: ",".join(f"{k}={v}" for k, v in c.items()))
@pytest.mark.parametrize("algorithm", BASELINES)
def test_the_release_verifies_the_criteria_in_sql(ward, algorithm: str, criteria: dict) -> None:
    # the SQL verification is the authority: the pipeline verifies before it writes, and
    # verify checks the written release again
    output = f"r_{algorithm}_{abs(hash(tuple(criteria.items()))) % 10**6}"
    result = sbc_sql.anonymize(
        ward,
        "t",
        5,
        qi="age,sex,zip",
        sensitive="dx",
        algorithm=algorithm,
        output=output,
        max_suppression=0.05,
        **criteria,
    )
    assert result.measures.released > 0 and result.measures.suppressed <= 0.05 * 240
    verdict = sbc_sql.verify(ward, "t", output, 5, **criteria)
    assert verdict.ok, verdict.problems


@pytest.mark.parametrize("algorithm", BASELINES)
def test_k_alone_breaks_every_criterion_on_the_ward(ward, algorithm: str) -> None:
    # what makes the test above one that can fail: k alone releases classes of one diagnosis
    output = f"k_{algorithm}"
    sbc_sql.anonymize(
        ward,
        "t",
        5,
        qi="age,sex,zip",
        sensitive="dx",
        algorithm=algorithm,
        output=output,
        max_suppression=0.05,
    )
    assert not any(sbc_sql.verify(ward, "t", output, 5, **criteria).ok for criteria in CRITERIA)
