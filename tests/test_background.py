"""Background-knowledge-aware clustering (kinc, kagg, beta-ge): the divergence, phase 1's
groups, beta_GE's buckets and splits, every released class's guarantees (k, beta-likeness,
beliefs within J, one group), the reasons of the rows not released, determinism, the
user's knowledge table, and one run of each algorithm on a 4,000-row sample of Adult."""

from __future__ import annotations

import importlib.util
import logging
import math
import sys
import time
from pathlib import Path

import duckdb
import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.spatial.distance import jensenshannon

from sbc_sql.cluster import registry
from sbc_sql.cluster.background import phase1 as p1
from sbc_sql.cluster.background.beta_ge import beta_ge, buckets, split
from sbc_sql.cluster.background.knowledge import estimate, from_table
from sbc_sql.cluster.background.likeness import Likeness
from sbc_sql.cluster.background.options import BackgroundOptions
from sbc_sql.cluster.background.space import Space
from sbc_sql.cluster.model import QIData
from sbc_sql.cluster.ncp import ncp_per_qi
from sbc_sql.cluster.sensitive import REASON_CODES, REASONS, Sensitive
from sbc_sql.errors import InputError
from sbc_sql.privacy.criteria import rule_of
from sbc_sql.quality.evaluate import evaluate

ROOT = Path(__file__).resolve().parents[1]
ALGORITHMS = ("kinc", "kagg", "beta-ge")


def table(n: int, seed: int, m: int = 4, n_sensitive: int = 1) -> QIData:
    """n rows: age (numeric with a few NULLs), sex and a 6-valued code, and a sensitive
    column correlated with them, so that beliefs differ across the QIs."""
    rng = np.random.default_rng(seed)
    age = rng.integers(18, 80, n).astype(np.float64)
    age[rng.random(n) < 0.05] = np.nan
    sex = rng.integers(0, 2, n).astype(np.int32)
    edu = rng.integers(0, 6, n).astype(np.int32)
    skew = (sex + edu + np.nan_to_num(age) // 20).astype(np.int64)
    columns = []
    for _ in range(n_sensitive):
        s = np.where(rng.random(n) < 0.5, skew % m, rng.integers(0, m, n)).astype(np.int32)
        columns.append(s)
    sens = Sensitive(
        tuple(f"s{i}" for i in range(n_sensitive)),
        tuple(columns),
        tuple(np.bincount(c, minlength=m) for c in columns),
        (False,) * n_sensitive,
    )
    finite = age[~np.isnan(age)]
    return QIData(
        ("age", "sex", "edu"),
        (True, False, False),
        (age, sex, edu),
        (float(finite.min()), np.nan, np.nan),
        (float(finite.max()), np.nan, np.nan),
        (0, 2, 6),
        (1.0, 1.0, 1.0),
        sensitive=sens,
    )


def run(
    data: QIData, algorithm: str, k: int, beta: float, **background
) -> tuple[registry.ClusterRun, BackgroundOptions]:
    bg = BackgroundOptions(**background)
    options = registry.ClusterOptions(rule=rule_of(beta_likeness=beta), max_suppression=1.0, background=bg)
    return registry.get(algorithm).run(data, k, options), bg


def check_release(
    data: QIData, result: registry.ClusterRun, k: int, beta: float, bg: BackgroundOptions
) -> None:
    """Every class: >= k rows, enhanced beta-likeness, beliefs pairwise within J, one
    phase-1 group; every row released or not with a reason."""
    labels = result.labels
    n = data.n_rows
    assert len(labels) == n and result.reasons is not None
    released = labels >= 0
    assert np.array_equal(result.reasons == 0, released)
    assert set(np.unique(result.reasons[~released])) <= {
        REASON_CODES[r] for r in ("bk_small", "lemma2", "kagg_left", "kinc_left")
    }
    assert int(released.sum()) + int((result.reasons > 0).sum()) == n
    if not released.any():
        return
    classes = int(labels.max()) + 1
    sizes = np.bincount(labels[released], minlength=classes)
    assert sizes.min() >= k
    assert rule_of(beta_likeness=beta).classes_ok(labels, data.sensitive).all()
    beliefs, key = estimate(data, bg)
    groups = p1.phase1(beliefs, key, data.position, bg.threshold, k)
    for c in range(classes):
        rows = np.flatnonzero(labels == c)
        assert len(set(groups.group[rows])) == 1 and groups.group[rows[0]] >= 0
        w = np.unique(beliefs[key[rows]], axis=0)
        assert p1.js_matrix(w).max() <= bg.threshold + 1e-12


# ---------------------------------------------------------------------------------------
# the divergence


def test_js_in_bits_and_scipys_square_root_in_nats():
    assert p1.js_bits(np.array([1.0, 0, 0]), np.array([0, 1.0, 0]))[0, 0] == pytest.approx(1.0)
    a, b = np.array([1.0, 0.0]), np.array([0.5, 0.5])
    bits = p1.js_bits(a, b)[0, 0]
    assert bits == pytest.approx(0.3113, abs=1e-4)
    # scipy gives the square root of the divergence, in nats by default
    root_nats = jensenshannon(a, b)
    assert root_nats == pytest.approx(0.4645, abs=1e-4)
    assert root_nats**2 == pytest.approx(0.2158, abs=1e-4)
    assert bits == pytest.approx(root_nats**2 / math.log(2))
    assert bits == pytest.approx(jensenshannon(a, b, base=2) ** 2)


def test_js_matrix_matches_scipy_on_random_beliefs():
    rng = np.random.default_rng(3)
    w = rng.dirichlet(np.ones(5) * 0.5, size=30)
    w[0] = [1, 0, 0, 0, 0]
    d = p1.js_matrix(w)
    want = np.array([[jensenshannon(x, y, base=2) ** 2 for y in w] for x in w])
    np.testing.assert_allclose(d, want, atol=1e-12)
    assert d.max() <= 1.0 and np.all(np.diag(d) == 0) and np.array_equal(d, d.T)


# ---------------------------------------------------------------------------------------
# phase 1


def partition(labels: np.ndarray) -> set[frozenset[int]]:
    return {frozenset(np.flatnonzero(labels == v).tolist()) for v in np.unique(labels) if v >= 0}


@settings(max_examples=25, deadline=None)
@given(
    st.integers(0, 10_000),
    st.integers(2, 25),
    st.floats(0.05, 0.9),
    st.integers(1, 4),
)
def test_phase1_on_duplicated_rows_is_phase1_on_distinct_rows(seed, v, threshold, k):
    rng = np.random.default_rng(seed)
    distinct = rng.dirichlet(np.ones(4), size=v)
    key = rng.integers(0, v, 60)
    # every row's own belief, clustered row by row ...
    per_row = p1.complete_linkage(distinct[key], threshold)
    # ... cuts the rows as the distinct beliefs mapped back do
    got = p1.phase1(distinct, key, np.arange(60), threshold, 1)
    assert partition(got.group) == partition(per_row)
    # groups under k rows are marked small, the rest are groups of at least k
    small = p1.phase1(distinct, key, np.arange(60), threshold, k)
    sizes = np.bincount(per_row)
    assert np.array_equal(small.small, sizes[per_row] < k)
    assert all(len(g) >= k for g in small.groups)
    for g in got.groups:
        assert p1.js_matrix(distinct[np.unique(key[g])]).max() <= threshold
    # deterministic order: by each group's first row
    firsts = [int(g.min()) for g in got.groups]
    assert firsts == sorted(firsts)


def test_small_groups_are_not_released_with_reason_bk_small():
    data = table(300, seed=1)
    result, bg = run(data, "kinc", 25, 3.0, threshold=0.05)
    beliefs, key = estimate(data, bg)
    groups = p1.phase1(beliefs, key, data.position, 0.05, 25)
    assert groups.small.any() and not groups.small.all()
    assert np.all(result.reasons[groups.small] == REASON_CODES["bk_small"])
    assert np.all(result.labels[groups.small] < 0)
    assert REASONS[REASON_CODES["bk_small"]] == "bk_small"
    check_release(data, result, 25, 3.0, bg)


def test_components_and_chunks_beyond_the_cap(caplog):
    rng = np.random.default_rng(5)
    # two far-apart families of beliefs: two components at a small threshold
    a = rng.dirichlet([50, 50, 1, 1], size=20)
    b = rng.dirichlet([1, 1, 50, 50], size=20)
    w = np.vstack([a, b])
    exact, approximate = p1.cluster_beliefs(w, 0.2, cap=100)
    by_component, approximate = p1.cluster_beliefs(w, 0.2, cap=25)
    assert not approximate and partition(by_component) == partition(exact)
    comp = p1.components(w, 0.2)
    assert len(set(comp[:20])) == 1 and len(set(comp[20:])) == 1 and comp[0] != comp[20]
    with caplog.at_level(logging.WARNING):
        chunked, approximate = p1.cluster_beliefs(w, 0.9, cap=15)
    assert approximate and "chunks" in caplog.text
    for lab in np.unique(chunked):
        rows = np.flatnonzero(chunked == lab)
        assert p1.js_matrix(w[rows]).max() <= 0.9


# ---------------------------------------------------------------------------------------
# beta_GE


def example1() -> tuple[Likeness, np.ndarray]:
    """26 rows: Flu 6, HIV 4, Hypertension 8, Brain tumour 8 (codes 0..3); beta 2."""
    counts = np.array([6, 4, 8, 8])
    sens = Sensitive(("dx",), (np.repeat(np.arange(4), counts).astype(np.int32),), (counts,), (False,))
    return Likeness(rule_of(beta_likeness=2.0), sens), np.array([3, 2, 4, 4])


def test_example_1_buckets_and_leaves():
    like, group = example1()
    np.testing.assert_allclose(like.cap, [0.569, 0.442, 0.670, 0.670], atol=1e-3)
    runs = buckets(group, like.p, like.bound)
    assert runs == [[1, 0], [2, 3]]  # {HIV, Flu}, {Hypertension, Brain tumour}
    caps = np.array([like.bound[r[0]] for r in runs])
    leaves = split(np.array([5, 8]), caps, 2)
    assert sorted(map(tuple, leaves)) == [(1, 2), (1, 2), (3, 4)]


def test_example_1_classes():
    like, group = example1()
    codes = np.repeat(np.arange(4), group).astype(np.int32)
    n = len(codes)
    age = np.arange(n, dtype=np.float64)
    sens = Sensitive(("dx",), (codes,), (np.array([6, 4, 8, 8]),), (False,))
    data = QIData(("age",), (True,), (age,), (0.0,), (12.0,), (0,), (1.0,), sensitive=sens)
    space = Space(data, np.arange(n), codes.astype(np.int64), 4)
    classes, left = beta_ge(space, np.arange(n, dtype=np.uint64), 2, like, np.random.default_rng(0))
    assert len(left) == 0 and sorted(len(c) for c in classes) == [3, 3, 7]
    assert sorted(np.concatenate(classes).tolist()) == list(range(n))
    labels = np.empty(n, dtype=np.int64)
    for i, c in enumerate(classes):
        labels[c] = i
    assert rule_of(beta_likeness=2.0).classes_ok(labels, sens).all()


def test_a_group_that_is_not_beta_like_is_not_released():
    like, _ = example1()
    codes = np.array([2] * 8 + [0, 1], dtype=np.int32)  # hypertension 8 of 10 > 0.670
    sens = Sensitive(("dx",), (codes,), (np.array([6, 4, 8, 8]),), (False,))
    data = QIData(("age",), (True,), (np.arange(10.0),), (0.0,), (9.0,), (0,), (1.0,), sensitive=sens)
    space = Space(data, np.arange(10), codes.astype(np.int64), 4)
    classes, left = beta_ge(space, np.arange(10, dtype=np.uint64), 2, like, np.random.default_rng(0))
    assert classes == [] and len(left) == 10


# ---------------------------------------------------------------------------------------
# every release


@settings(max_examples=12, deadline=None)
@given(
    st.sampled_from(ALGORITHMS),
    st.integers(0, 1_000),
    st.integers(40, 160),
    st.integers(2, 6),
    st.sampled_from([0.2, 0.5, 0.8, 1.0]),
    st.sampled_from([1.0, 2.0, 4.0]),
    st.sampled_from(["nb", "combo", "kernel"]),
    st.booleans(),
)
def test_every_released_class_keeps_k_beta_and_j(algorithm, seed, n, k, threshold, beta, estimator, rescue):
    data = table(n, seed)
    result, bg = run(
        data, algorithm, k, beta, threshold=threshold, estimator=estimator, rescue=rescue, rare_aware=rescue
    )
    check_release(data, result, k, beta, bg)


def test_rescue_places_rows_the_post_processing_left():
    data = table(400, seed=7)
    with_rescue, bg = run(data, "kinc", 5, 1.0)
    without, _ = run(data, "kinc", 5, 1.0, rescue=False)
    assert int((with_rescue.labels < 0).sum()) < int((without.labels < 0).sum())
    check_release(data, with_rescue, 5, 1.0, bg)


@pytest.mark.parametrize("algorithm", ALGORITHMS)
def test_same_seed_same_classes(algorithm):
    data = table(300, seed=11)
    a, _ = run(data, algorithm, 4, 2.0, seed=9)
    b, _ = run(data, algorithm, 4, 2.0, seed=9)
    assert np.array_equal(a.labels, b.labels) and np.array_equal(a.reasons, b.reasons)
    assert a.labels.tobytes() == b.labels.tobytes()


def test_beta_ge_random_choices_follow_the_seed():
    data = table(400, seed=12)
    runs = {s: run(data, "beta-ge", 4, 2.0, seed=s)[0].labels.tobytes() for s in range(4)}
    assert len(set(runs.values())) > 1


# ---------------------------------------------------------------------------------------
# the registry


@pytest.mark.parametrize("algorithm", ALGORITHMS)
def test_without_beta_likeness_is_one_error(algorithm):
    data = table(60, seed=0)
    entry = registry.get(algorithm)
    assert entry.criteria and not entry.presuppress and entry.requires == ("beta",)
    with pytest.raises(InputError, match=f"^--algorithm {algorithm} needs --beta-likeness"):
        entry.run(data, 4)
    with pytest.raises(InputError, match="one sensitive column"):
        entry.run(table(60, 0, n_sensitive=2), 4, registry.ClusterOptions(rule=rule_of(beta_likeness=2.0)))
    with pytest.raises(InputError, match="beta-likeness only"):
        entry.run(data, 4, registry.ClusterOptions(rule=rule_of(l_diversity=2, beta_likeness=2.0)))


def test_rows_not_released_count_against_the_budget():
    data = table(300, seed=1)
    options = registry.ClusterOptions(
        rule=rule_of(beta_likeness=3.0), max_suppression=0.01, background=BackgroundOptions(threshold=0.05)
    )
    with pytest.raises(InputError, match=r"above --max-suppression 0\.01") as caught:
        registry.get("kinc").run(data, 25, options)
    assert str(caught.value).endswith("or a larger --bk-threshold")
    # the default with a bound: its groups under k rows count against the budget too
    plain = registry.ClusterOptions(background=BackgroundOptions(threshold=0.05))
    with pytest.raises(InputError, match=r"fewer than k rows, above --max-suppression 0\.01") as caught:
        registry.get("sbca").run(data, 25, plain)
    assert str(caught.value).endswith("or a larger --bk-threshold")


def test_options_are_checked():
    with pytest.raises(ValueError, match=r"outside \(0, 1\]"):
        BackgroundOptions(threshold=0.0)
    with pytest.raises(ValueError, match="not one of nb, combo, kernel"):
        BackgroundOptions(estimator="exact")
    assert registry.ClusterOptions().background is None
    assert set(ALGORITHMS) <= set(registry.names())
    assert not set(ALGORITHMS) & set(registry.runnable())
    assert set(ALGORITHMS) <= set(registry.runnable(rule_of(beta_likeness=2.0)))
    assert not set(ALGORITHMS) & set(registry.runnable(rule_of(l_diversity=2, beta_likeness=2.0)))


def test_the_default_clusters_each_group_alone():
    data = table(400, seed=4)
    bg = BackgroundOptions(threshold=0.3)
    plain = registry.get("sbca").run(data, 5)
    grouped = registry.get("sbca").run(data, 5, registry.ClusterOptions(background=bg))
    beliefs, key = estimate(data, bg)
    groups = p1.phase1(beliefs, key, data.position, 0.3, 5)
    assert len(groups.groups) > 1
    labels = grouped.labels
    for c in np.unique(labels[labels >= 0]):
        assert len(set(groups.group[labels == c])) == 1
    assert np.all(labels[groups.small] < 0)
    assert grouped.reasons is not None and np.all(grouped.reasons[groups.small] == REASON_CODES["bk_small"])
    assert np.bincount(labels[labels >= 0]).min() >= 5
    # without a bound the default is untouched
    again = registry.run_clustering(data, 5)
    assert np.array_equal(plain.labels, again.labels)


# ---------------------------------------------------------------------------------------
# the user's knowledge table


def records() -> tuple[pa.Table, np.ndarray, list[object]]:
    rec = pa.table({"sex": ["F", "M", "F", "M", None], "zip": ["a1", "b2", "a1", "b2", "a1"]})
    return rec, np.array([10, 11, 12, 13, 14]), ["flu", "cold", None]


def test_a_wide_and_a_long_table_give_the_same_beliefs():
    rec, pos, values = records()
    wide = pa.table({"sex": ["F", "M", None], "flu": [0.5, 0.25, 1.0], "cold": [0.5, 0.75, 0.0]})
    long = pa.table(
        {
            "sex": ["F", "F", "M", "M", None],
            "sensitive_value": ["flu", "cold", "flu", "cold", "flu"],
            "probability": [0.5, 0.5, 0.25, 0.75, 1.0],
        }
    )
    a = from_table(wide, rec, pos, values, "dx")
    b = from_table(long, rec, pos, values, "dx")
    np.testing.assert_allclose(a.matrix, b.matrix)
    np.testing.assert_allclose(a.matrix[1], [0.25, 0.75, 0.0])
    assert np.array_equal(a.position, pos)


@pytest.mark.parametrize(
    ("knowledge", "message"),
    [
        (
            {"sex": ["F", "M", None], "flu": [0.5, float("nan"), 1.0], "cold": [0.5, 0.75, 0.0]},
            "1 probability cell(s) of the background knowledge are not finite numbers >= 0",
        ),
        (
            {"sex": ["F", "M", None], "flu": [1.5, 0.25, 1.0], "cold": [-0.5, 0.75, 0.0]},
            "1 probability cell(s) of the background knowledge are not finite numbers >= 0",
        ),
        (
            {"sex": ["F", "M", None], "flu": [0.5, 0.3, 1.0], "cold": [0.5, 0.75, 0.0]},
            "1 key row(s) of the background knowledge have probabilities that do not sum to 1",
        ),
        (
            {"sex": ["F", "M"], "flu": [0.5, 0.25], "cold": [0.5, 0.75]},
            "1 row(s) of the input match no key row of the background knowledge (keyed on sex)",
        ),
        (
            {"sex": ["F", "M", None, "F"], "flu": [0.5, 0.25, 1.0, 1.0], "cold": [0.5, 0.75, 0.0, 0.0]},
            "1 key row(s) of the background knowledge repeat an earlier key",
        ),
        (
            {"sex": ["F", "M", None], "flu": [0.5, 0.25, 1.0], "mumps": [0.5, 0.75, 0.0]},
            "column 'mumps' of the background knowledge is not a value of 'dx'",
        ),
        (
            {"flu": [0.5, 0.25, 1.0], "cold": [0.5, 0.75, 0.0]},
            "names none of the QIs (sex, zip) as a key column",
        ),
        (
            {"sex": ["F", "M", None], "flu": ["x", "y", "z"]},
            "column 'flu' of the background knowledge is neither a QI nor numeric",
        ),
    ],
)
def test_knowledge_table_errors_name_the_column_or_count(knowledge, message):
    rec, pos, values = records()
    with pytest.raises(InputError) as caught:
        from_table(pa.table(knowledge), rec, pos, values, "dx")
    text = str(caught.value)
    assert message in text
    assert "\n" not in text
    # never a cell value (a key's value, a probability)
    for cell in ("'F'", "'M'", "0.3", "1.5", "nan", "a1"):
        assert cell not in text


def test_user_knowledge_drives_phase_1():
    data = table(80, seed=2)
    # two beliefs: far apart, so J = 0.5 cuts the rows by sex
    m = 4
    beliefs = np.where(data.columns[1][:, None] == 0, [0.97, 0.01, 0.01, 0.01], [0.01, 0.01, 0.01, 0.97])
    from sbc_sql.cluster.background.options import UserKnowledge

    bg = BackgroundOptions(threshold=0.5, knowledge=UserKnowledge(data.position.copy(), beliefs))
    assert bg.source == "the user's table"
    w, key = estimate(data, bg)
    assert w.shape == (80, m)
    groups = p1.phase1(w, key, data.position, 0.5, 2)
    assert partition(groups.group) == partition(data.columns[1].astype(np.int64))


# ---------------------------------------------------------------------------------------
# record linkage of one class


def test_record_linkage_of_one_class_of_n_rows_is_one():
    con = duckdb.connect()
    con.execute("CREATE TABLE t AS SELECT 20 + i AS age, ['F', 'M'][1 + i % 2] AS sex FROM range(7) r(i)")
    con.execute(
        "CREATE TABLE r AS SELECT 0 AS eq_class, 20 AS age_min, 26 AS age_max, false AS age_has_null, "
        "['F', 'M'] AS sex FROM range(7)"
    )
    e = evaluate(con, "t", "r", queries=0)
    assert e.record_linkage == pytest.approx(1.0)
    assert e.record_linkage_share == pytest.approx(1 / 7)


# ---------------------------------------------------------------------------------------
# Adult


def adult_sample(n: int = 4000, seed: int = 0) -> QIData:
    """n rows of the clean Adult rows drawn without replacement: QIs age, sex, education
    (ordered by education-num), occupation sensitive."""
    spec = importlib.util.spec_from_file_location("sbc_bench_datasets", ROOT / "benchmarks" / "datasets.py")
    assert spec is not None and spec.loader is not None
    datasets = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = datasets
    spec.loader.exec_module(datasets)
    con = duckdb.connect()
    datasets.load_adult(con, "adult", columns=["age", "sex", "education", "education_num", "occupation"])
    rows = con.execute("SELECT age, sex, education, education_num, occupation FROM adult").fetchall()
    pick = np.sort(np.random.default_rng(seed).choice(len(rows), n, replace=False))
    age = np.array([rows[i][0] for i in pick], dtype=np.float64)
    sexes = sorted({r[1] for r in rows})
    edu_order = sorted({(r[3], r[2]) for r in rows})
    edu_rank = {e: i for i, (_, e) in enumerate(edu_order)}
    occupations = sorted({r[4] for r in rows})
    sex = np.array([sexes.index(rows[i][1]) for i in pick], dtype=np.int32)
    edu = np.array([edu_rank[rows[i][2]] for i in pick], dtype=np.int32)
    occ = np.array([occupations.index(rows[i][4]) for i in pick], dtype=np.int32)
    sens = Sensitive(("occupation",), (occ,), (np.bincount(occ, minlength=len(occupations)),), (False,))
    return QIData(
        ("age", "sex", "education"),
        (True, False, False),
        (age, sex, edu),
        (float(age.min()), np.nan, np.nan),
        (float(age.max()), np.nan, np.nan),
        (0, len(sexes), len(edu_rank)),
        (1.0, 1.0, 1.0),
        sensitive=sens,
    )


@pytest.fixture(scope="module")
def adult() -> QIData:
    return adult_sample()


@pytest.mark.parametrize("algorithm", ALGORITHMS)
def test_adult_end_to_end(adult, algorithm, capsys):
    start = time.perf_counter()
    result, bg = run(adult, algorithm, 5, 3.0, threshold=0.8)
    seconds = time.perf_counter() - start
    check_release(adult, result, 5, 3.0, bg)
    labels = result.labels
    removed = int((labels < 0).sum())
    n, d = adult.n_rows, adult.n_qis
    # GCP / (n d): released classes only (ncp_per_qi charges a row not released 1 per QI)
    gcp = float(ncp_per_qi(adult, labels).sum()) / d - removed / n
    sizes = np.bincount(labels[labels >= 0])
    assert 0.0 < gcp < 0.6
    assert removed < n // 2 and sizes.mean() >= 5
    with capsys.disabled():
        print(
            f"\nAdult 4,000 (seed 0) {algorithm} J=0.8 beta=3 k=5: GCP/nd {gcp:.3f}, removed {removed}, "
            f"mean class {sizes.mean():.2f}, {seconds:.2f} s"
        )


# ---------------------------------------------------------------------------------------
# anonymize and the command line


@pytest.fixture
def clinic(tmp_path: Path) -> Path:
    path = tmp_path / "bk.duckdb"
    with duckdb.connect(str(path)) as con:
        con.execute(
            "CREATE TABLE t AS SELECT 20 + (i * 7) % 50 AS age, ['F', 'M'][1 + i % 2] AS sex, "
            "'d' || ((i * 13 + i // 3) % 3) AS dx FROM range(400) r(i)"
        )
        con.execute("COMMENT ON COLUMN t.dx IS 'sbc:sensitive'")
    return path


@pytest.mark.parametrize("algorithm", ALGORITHMS)
def test_anonymize_writes_a_verified_release(clinic, algorithm):
    import sbc_sql

    with duckdb.connect(str(clinic)) as con:
        result = sbc_sql.anonymize(
            con, "t", 5, output="r", algorithm=algorithm, beta_likeness=3.0, bk_threshold=0.5
        )
        assert result.verdict is not None and result.verdict.ok
        assert sbc_sql.verify(con, "t", "r", 5, beta_likeness=3.0).ok


def test_the_users_knowledge_from_a_file_on_the_command_line(clinic, cli, tmp_path):
    priors = tmp_path / "priors.csv"
    priors.write_text("sex,d0,d1,d2\nF,0.34,0.33,0.33\nM,0.9,0.05,0.05\n")
    res = cli(
        ["anonymize", "--db", clinic, "--table", "t", "-k", "5", "--output", "r", "--algorithm", "beta-ge"]
        + ["--beta-likeness", "3", "--bk", str(priors), "--bk-threshold", "0.1", "--seed", "3"]
    )
    assert res.exit_code == 0, res.stderr
    assert "background knowledge from the user's table, J=0.1 bits, 2 group(s)" in res.stderr
    with duckdb.connect(str(clinic)) as con:
        # the two beliefs are more than 0.1 bits apart: no class mixes the sexes
        widest = con.execute("SELECT max(len(sex)) FROM r").fetchone()[0]
    assert widest == 1


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--bk-threshold", "1.5"], "--bk-threshold 1.5 is outside (0, 1]"),
        (["--bk-threshold", "0"], "--bk-threshold 0.0 is outside (0, 1]"),
        (["--algorithm", "kinc"], "--algorithm kinc needs --beta-likeness"),
        (["--algorithm", "mondrian", "--bk-threshold", "0.5"], "--algorithm mondrian does not read them"),
        (["--bk-estimator", "exact"], "--bk-estimator 'exact' is not one of nb, combo, kernel"),
        (["--bk", "missing.csv"], "--bk file 'missing.csv' does not exist"),
    ],
)
def test_bad_background_options_are_one_error_line(clinic, cli, args, message):
    res = cli(["anonymize", "--db", clinic, "--table", "t", "-k", "5", *args])
    assert res.exit_code == 1
    last = res.stderr.strip().splitlines()[-1]
    assert last.startswith("Error: ") and message in last


def test_basic_beta_likeness_is_kept_when_asked():
    data = table(300, seed=8)
    basic = rule_of(beta_likeness=1.0, beta_basic=True)
    for algorithm in ALGORITHMS:
        options = registry.ClusterOptions(rule=basic, max_suppression=1.0, background=BackgroundOptions())
        labels = registry.get(algorithm).run(data, 4, options).labels
        assert basic.classes_ok(labels, data.sensitive).all()


def test_the_default_keeps_the_criteria_inside_each_group():
    data = table(600, seed=9)
    bg = BackgroundOptions(threshold=0.2)
    rule = rule_of(beta_likeness=2.0)
    result = registry.get("sbca").run(
        data, 5, registry.ClusterOptions(rule=rule, max_suppression=0.5, background=bg)
    )
    labels = result.labels
    beliefs, key = estimate(data, bg)
    groups = p1.phase1(beliefs, key, data.position, 0.2, 5)
    assert len(groups.groups) > 1
    assert rule.classes_ok(labels, data.sensitive).all()
    for c in np.unique(labels[labels >= 0]):
        assert len(set(groups.group[labels == c])) == 1
