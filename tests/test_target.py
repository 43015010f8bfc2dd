"""--target: the default SBCA keeps classes pure on a label released verbatim, trading
total NCP for the classification metric CM (rows outside their class's majority label) by
--target-weight; the target is never a QI; with criteria on it, the criteria still hold."""

from __future__ import annotations

from pathlib import Path

import duckdb
import numpy as np
import pytest
from helpers import adult_file, assert_one_error, load_example, run_cli

import sbc_sql
from sbc_sql.cluster.model import QIData
from sbc_sql.cluster.registry import ClusterOptions, get
from sbc_sql.errors import InputError

datasets = load_example("benchmarks/datasets.py")


def labelled(n: int = 3000, seed: int = 9) -> QIData:
    """Ages, a 12-valued job and a 30-valued country; a 3-valued label that follows age and
    job loosely (so QI-similar rows often share it, but not always)."""
    rng = np.random.default_rng(seed)
    age = np.clip(rng.normal(45, 15, n), 17, 90).round()
    job = rng.integers(0, 12, n).astype(np.int32)
    country = rng.integers(0, 30, n).astype(np.int32)
    score = (age - 45) / 15 + (job % 3) - 1 + rng.normal(0, 1.0, n)
    target = np.digitize(score, [-0.7, 0.7]).astype(np.int32)
    return QIData(
        ("age", "job", "country"),
        (True, False, False),
        (age, job, country),
        (float(age.min()), np.nan, np.nan),
        (float(age.max()), np.nan, np.nan),
        (0, 12, 30),
        (1.0, 1.0, 1.0),
        target=target,
    )


def cm(data: QIData, labels: np.ndarray) -> float:
    """Rows outside their class's majority label, suppressed rows counted, over all rows."""
    assert data.target is not None
    bad = int((labels < 0).sum())
    for c in np.unique(labels[labels >= 0]):
        t = data.target[labels == c]
        bad += len(t) - int(np.bincount(t).max())
    return bad / len(labels)


def ncp(data: QIData, labels: np.ndarray) -> float:
    total = 0.0
    for c in np.unique(labels[labels >= 0]):
        rows = labels == c
        for q in range(data.n_qis):
            col = data.columns[q][rows]
            if data.numeric[q]:
                part = (col.max() - col.min()) / data.span(q)
            else:
                u = len(np.unique(col))
                part = u / data.cardinality[q] if u > 1 else 0.0
            total += part * rows.sum()
    return total / (data.n_rows * data.n_qis)


@pytest.mark.parametrize("mode", ["exact", "blocks"])
@pytest.mark.parametrize("k", [5, 20])
def test_the_target_lowers_cm_at_little_ncp(mode: str, k: int) -> None:
    data = labelled()
    plain = get("sbca").run(data, k, ClusterOptions(mode=mode, target_weight=0.0)).labels
    pure = get("sbca").run(data, k, ClusterOptions(mode=mode, target_weight=0.03)).labels
    sizes = np.bincount(pure[pure >= 0])
    assert sizes[sizes > 0].min() >= k and (pure >= 0).all()
    assert cm(data, pure) < cm(data, plain)
    assert ncp(data, pure) <= 1.1 * ncp(data, plain)
    # more weight, purer classes
    purer = get("sbca").run(data, k, ClusterOptions(mode=mode, target_weight=0.3)).labels
    assert cm(data, purer) < min(cm(data, pure), 0.7 * cm(data, plain))


def test_weight_zero_or_no_target_is_the_release_without_one() -> None:
    data = labelled(800)
    bare = QIData(data.names, data.numeric, data.columns, data.lo, data.hi, data.cardinality, data.weights)
    none = get("sbca").run(bare, 5, ClusterOptions(mode="exact")).labels
    zero = get("sbca").run(data, 5, ClusterOptions(mode="exact", target_weight=0.0)).labels
    assert np.array_equal(none, zero)


def test_algorithms_that_do_not_read_a_target_refuse_it() -> None:
    with pytest.raises(InputError, match="does not read --target"):
        get("sbca-paper").run(labelled(100), 5, ClusterOptions(target_weight=0.1))


@pytest.fixture(scope="module")
def adult_db(tmp_path_factory) -> Path:
    return adult_file(tmp_path_factory.mktemp("adult"), [*datasets.ADULT_QIS_8, "income"])


def release_cm(path: Path, release: str) -> float:
    """CM of a release by an independent GROUP BY on its view (no row is suppressed here)."""
    with duckdb.connect(str(path), read_only=True) as con:
        (bad,) = con.execute(
            f"SELECT sum(n - top) FROM (SELECT eq_class, count(*) AS n, max(c) AS top FROM "
            f'(SELECT eq_class, income, count(*) OVER (PARTITION BY eq_class, income) AS c FROM "{release}") '
            "GROUP BY eq_class)"
        ).fetchone()
        (rows,) = con.execute('SELECT count(*) FROM "adult"').fetchone()
    return float(bad) / rows


def test_adult_target_income(adult_db: Path) -> None:
    qi = ",".join(datasets.ADULT_QIS_8)
    base = ["anonymize", "--db", adult_db, "-t", "adult", "-k", "10", "--qi", qi, "--keep", "income", "-q"]
    assert run_cli([*base, "-o", "plain"]).exit_code == 0
    res = run_cli([*base[:-3], "--target", "income", "-q", "-o", "pure"])
    assert res.exit_code == 0, res.stderr
    assert release_cm(adult_db, "pure") < 0.6 * release_cm(adult_db, "plain")
    with duckdb.connect(str(adult_db), read_only=True) as con:
        doc = con.execute("SELECT comment FROM duckdb_views() WHERE view_name = 'pure'").fetchone()[0]
    assert '"target":"income"' in doc


def test_a_sensitive_target_keeps_l_diversity_and_warns_without_it(adult_db: Path) -> None:
    qi = ",".join(datasets.ADULT_QIS_8)
    base = ["anonymize", "--db", adult_db, "-t", "adult", "-k", "10", "--qi", qi, "--sensitive", "income"]
    res = run_cli([*base, "--target", "income", "--l-diversity", "2", "-o", "pure_l2"])
    assert res.exit_code == 0, res.stderr
    with duckdb.connect(str(adult_db), read_only=True) as con:
        (least,) = con.execute(
            'SELECT min(n) FROM (SELECT count(DISTINCT income) AS n FROM "pure_l2" GROUP BY eq_class)'
        ).fetchone()
    assert least >= 2
    warned = run_cli([*base, "--target", "income", "-o", "pure_s"])
    assert warned.exit_code == 0
    assert "warning: --target 'income' is sensitive and no criterion bounds it" in warned.stderr


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        (["--target", "age"], "--target names 'age', a quasi-identifier"),
        (["--target", "salary"], "--target names 'salary', which is not a column"),
        (
            ["--target", "income", "--target-weight", "-1"],
            "--target-weight -1.0 is not a number of 0 or more",
        ),
        (["--target-weight", "0.1"], "give --target COLUMN too"),
        (
            ["--target", "income", "--algorithm", "sbca-paper"],
            "--algorithm sbca-paper does not read --target",
        ),
    ],
)
def test_bad_targets_are_one_error(adult_db: Path, flags, message) -> None:
    qi = ",".join(datasets.ADULT_QIS_8)
    res = run_cli(
        [
            "anonymize",
            "--db",
            adult_db,
            "-t",
            "adult",
            "-k",
            "10",
            "--qi",
            qi,
            "--keep",
            "income",
            "-o",
            "bad",
            *flags,
        ]
    )
    assert_one_error(res, message)


def test_the_api_takes_the_target(adult_db: Path) -> None:
    with sbc_sql.anonymize(
        str(adult_db), "adult", 5, qi=datasets.ADULT_QIS_8, keep="income", target="income", output="api_t",
        target_weight=0.2,
    ) as result:  # fmt: skip
        assert result.verdict is not None and result.verdict.ok
    assert release_cm(adult_db, "api_t") < 0.05


def test_kmember_with_a_target_is_dppsct_and_its_twins_agree() -> None:
    from sbc_sql.cluster.baselines.kmember import _greedy_numba, greedy_numpy, kernel_arrays

    data = labelled(600)
    assert data.target is not None
    order = data.sort_order()
    arrays = kernel_arrays(data, order)
    tgt = data.target[order].astype(np.int64)
    compiled = _greedy_numba(*arrays, 6, tgt, 0.3)
    assert np.array_equal(compiled, greedy_numpy(*arrays, 6, tgt, 0.3))
    plain = get("kmember").run(data, 6, ClusterOptions(target_weight=0.0)).labels
    aware = get("kmember").run(data, 6, ClusterOptions(target_weight=0.1))
    assert "DPPSCT" in aware.detail
    assert cm(data, aware.labels) < cm(data, plain)
    sizes = np.bincount(aware.labels[aware.labels >= 0])
    assert sizes[sizes > 0].min() >= 6


def test_mondrian_with_a_target_cuts_labels_apart() -> None:
    data = labelled(2000)
    plain = get("mondrian").run(data, 8, ClusterOptions(target_weight=0.0)).labels
    aware = get("mondrian").run(data, 8, ClusterOptions(target_weight=0.5))
    assert "label purity" in aware.detail
    assert cm(data, aware.labels) < cm(data, plain)
    sizes = np.bincount(aware.labels[aware.labels >= 0])
    assert sizes[sizes > 0].min() >= 8 and (aware.labels >= 0).all()


def test_a_target_of_too_many_labels_is_one_error(adult_db: Path) -> None:
    with pytest.raises(InputError, match="target='age' has 72 distinct values, above the 64 labels"):
        sbc_sql.anonymize(
            str(adult_db), "adult", 5, qi=datasets.ADULT_QIS_8[1:], keep="age,income", target="age"
        )


def test_evaluate_reads_the_recorded_target(adult_db: Path) -> None:
    """A release made with --target is evaluated on it without naming it again."""
    with sbc_sql.anonymize(
        str(adult_db), "adult", 10, qi=datasets.ADULT_QIS_8, keep="income", target="income", output="rec_t"
    ):
        pass
    recorded = sbc_sql.evaluate(str(adult_db), "adult", "rec_t", queries=0)
    named = sbc_sql.evaluate(str(adult_db), "adult", "rec_t", queries=0, target="income")
    assert recorded.target == "income" and recorded.cm == named.cm
    assert recorded.cm == pytest.approx(release_cm(adult_db, "rec_t"), abs=1e-12)
    with sbc_sql.anonymize(
        str(adult_db), "adult", 10, qi=datasets.ADULT_QIS_8, keep="income", output="rec_n"
    ):
        pass
    assert sbc_sql.evaluate(str(adult_db), "adult", "rec_n", queries=0).cm is None
