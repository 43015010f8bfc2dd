"""Per-column limits (--max-width, --max-values): the default SBCA keeps them while it
clusters, in one block and in blocks, with and without privacy criteria; rows that fit no
class are suppressed within --max-suppression; SQL verification checks them on the written
release and on a release checked later; bad limits are one Error: line and write nothing."""

from __future__ import annotations

import json
from pathlib import Path

import duckdb
import numpy as np
import pandas as pd
import pytest
import sqlglot
from helpers import adult_file, assert_one_error, connected, load_example, make_table, run_cli

import sbc_sql
from sbc_sql.cluster.limits import Limits
from sbc_sql.cluster.model import QIData
from sbc_sql.cluster.registry import ClusterOptions, get
from sbc_sql.cluster.sensitive import Sensitive
from sbc_sql.errors import InputError
from sbc_sql.privacy.criteria import rule_of

datasets = load_example("benchmarks/datasets.py")


def people(n: int = 3000, seed: int = 3) -> QIData:
    """Ages 17-90 skewed young, a 12-valued and a 40-valued category, a 3-valued sensitive."""
    rng = np.random.default_rng(seed)
    age = np.clip(rng.gamma(4.0, 8.0, n) + 17, 17, 90).round()
    job = rng.integers(0, 12, n).astype(np.int32)
    country = np.minimum(rng.zipf(1.6, n) - 1, 39).astype(np.int32)
    dx = rng.integers(0, 3, n).astype(np.int32)
    sens = Sensitive(("dx",), (dx,), (np.bincount(dx, minlength=3),), (False,))
    return QIData(
        ("age", "job", "country"),
        (True, False, False),
        (age, job, country),
        (float(age.min()), np.nan, np.nan),
        (float(age.max()), np.nan, np.nan),
        (0, 12, 40),
        (1.0, 1.0, 1.0),
        sensitive=sens,
    )


@pytest.mark.parametrize("mode", ["exact", "blocks"])
@pytest.mark.parametrize(
    "limits",
    [Limits({"age": 4}), Limits({}, {"country": 2}), Limits({"age": 6}, {"job": 3, "country": 3})],
    ids=["width", "values", "both"],
)
def test_every_class_keeps_the_limits(mode: str, limits: Limits) -> None:
    data, k = people(), 8
    free = get("sbca").run(data, k, ClusterOptions(mode=mode)).labels
    # without them the same clustering breaks them: the test asks something
    assert sum(Limits(limits.width, limits.values).broken(data, free).values()) > 0
    run = get("sbca").run(data, k, ClusterOptions(mode=mode, limits=limits, max_suppression=0.05))
    labels = run.labels
    assert limits.broken(data, labels) == dict.fromkeys((*limits.width, *limits.values), 0)
    sizes = np.bincount(labels[labels >= 0])
    assert sizes[sizes > 0].min() >= k
    assert (labels < 0).sum() <= 0.05 * data.n_rows
    assert run.reasons is not None and set(np.unique(run.reasons[labels < 0])) <= {8}  # "limits"


def test_limits_and_l_diversity_hold_together() -> None:
    data, k = people(), 6
    limits = Limits({"age": 5}, {"country": 2})
    run = get("sbca").run(
        data,
        k,
        ClusterOptions(mode="exact", limits=limits, rule=rule_of(l_diversity=2), max_suppression=0.05),
    )
    labels = run.labels
    assert sum(limits.broken(data, labels).values()) == 0
    assert data.sensitive is not None
    dx = data.sensitive.codes[0]
    for c in np.unique(labels[labels >= 0]):
        assert len(np.unique(dx[labels == c])) >= 2


def test_a_limit_that_binds_nothing_leaves_the_release_as_it_was() -> None:
    data = people(800)
    plain = get("sbca").run(data, 5, ClusterOptions(mode="exact")).labels
    loose = (
        get("sbca")
        .run(data, 5, ClusterOptions(mode="exact", limits=Limits({"age": 1000}, {"job": 12})))
        .labels
    )
    assert np.array_equal(plain, loose)


def test_other_algorithms_refuse_limits() -> None:
    with pytest.raises(InputError, match="does not keep per-column limits"):
        get("mondrian").run(people(200), 5, ClusterOptions(limits=Limits({"age": 3})))


@pytest.fixture(scope="module")
def adult_db(tmp_path_factory) -> Path:
    return adult_file(tmp_path_factory.mktemp("adult"), datasets.ADULT_QIS_8)


def tables(path: Path) -> set[str]:
    with duckdb.connect(str(path), read_only=True) as con:
        return {r[0] for r in con.execute("SELECT table_name FROM information_schema.tables").fetchall()}


def widest(path: Path, release: str, column: str) -> float:
    with duckdb.connect(str(path), read_only=True) as con:
        (top,) = con.execute(f'SELECT max("{column}_max" - "{column}_min") FROM "{release}"').fetchone()
    return float(top)


def test_adult_max_width_age_5(adult_db: Path) -> None:
    """Done-when: --max-width age=5 gives a release where no class spans more than 5 years."""
    qi = ",".join(datasets.ADULT_QIS_8)
    base = ["anonymize", "--db", adult_db, "-t", "adult", "-k", "10", "--qi", qi, "--json"]
    free = run_cli([*base, "-o", "adult_free"])
    assert free.exit_code == 0, free.stderr
    assert widest(adult_db, "adult_free", "age") > 5  # the default alone spans more
    res = run_cli([*base, "-o", "adult_w5", "--max-width", "age=5"])
    assert res.exit_code == 0, res.stderr
    doc = json.loads(res.stdout)
    assert doc["limits"] == {"max_width": {"age": 5.0}, "max_values": {}}
    assert widest(adult_db, "adult_w5", "age") <= 5
    # every released row lies in its class's range (an independent join on the view)
    with duckdb.connect(str(adult_db), read_only=True) as con:
        (rows,) = con.execute('SELECT count(*) FROM "adult_w5"').fetchone()
    assert rows == doc["released"] and doc["suppressed"] <= 0.01 * 30162
    checked = run_cli(
        ["verify", "--db", adult_db, "--original", "adult", "--release", "adult_w5", "-k", "10"]
    )
    assert checked.exit_code == 0, checked.stdout + checked.stderr


def test_verification_finds_a_class_wider_than_its_recorded_limit(adult_db: Path) -> None:
    qi = ",".join(datasets.ADULT_QIS_8)
    res = run_cli(
        ["anonymize", "--db", adult_db, "-t", "adult", "-k", "10", "--qi", qi, "-o", "adult_v2", "-q"]
        + ["--max-values", "education=2"]
    )
    assert res.exit_code == 0, res.stderr
    assert "verified the per-column limits: education=2" in res.stdout
    with duckdb.connect(str(adult_db)) as con:
        con.execute(
            "UPDATE \"adult_v2_classes\" SET education = list_concat(education, ['Doctorate', 'Masters', "
            "'Bachelors']) WHERE eq_class = 0"
        )
    checked = run_cli(
        ["verify", "--db", adult_db, "--original", "adult", "--release", "adult_v2", "-k", "10"]
    )
    assert checked.exit_code != 0
    assert "hold more values than --max-values education=2" in checked.stdout + checked.stderr


def visits() -> pd.DataFrame:
    """600 visits of a year: a day, a time of that day, a ward and a diagnosis."""
    rng = np.random.default_rng(5)
    n = 600
    day = pd.to_datetime("2024-01-01") + pd.to_timedelta(rng.integers(0, 365, n), unit="D")
    return pd.DataFrame(
        {
            "visit": day.date,
            "seen_at": day + pd.to_timedelta(rng.integers(0, 86_400, n), unit="s"),
            "ward": rng.choice(list("ABCDEFGH"), n),
            "dx": rng.choice(["x", "y", "z"], n),
        }
    )


@pytest.fixture
def visits_db(tmp_path: Path) -> Path:
    path = tmp_path / "visits.duckdb"
    with duckdb.connect(str(path)) as con:
        make_table(con, "visits", visits())
    return path


def test_date_and_timestamp_widths_are_days(engine) -> None:
    database = engine.frame(visits(), name="visits")
    with sbc_sql.anonymize(
        database,
        "visits",
        5,
        qi="visit,seen_at,ward",
        sensitive="dx",
        output="vis",
        max_width="visit=10,seen_at=12",
        max_values="ward=2",
        max_suppression=0.2,
    ) as result:
        assert result.verdict is not None and result.verdict.ok
    with connected(database) as eng:
        classes = eng.fetch_arrow(sqlglot.parse_one("SELECT * FROM vis_classes", read="duckdb")).to_pandas()
    days = max((hi - lo).days for lo, hi in zip(classes["visit_min"], classes["visit_max"], strict=True))
    span = max(hi - lo for lo, hi in zip(classes["seen_at_min"], classes["seen_at_max"], strict=True))
    assert days <= 10 and span <= pd.Timedelta(days=12)
    assert max(len(values) for values in classes["ward"]) <= 2
    verdict = sbc_sql.verify(database, "visits", "vis", 5)
    assert verdict.ok, verdict.problems


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        (["--max-width", "height=5"], "--max-width names 'height', which is not a quasi-identifier"),
        (["--max-width", "ward=5"], "--max-width names 'ward', a categorical quasi-identifier"),
        (["--max-values", "visit=2"], "--max-values names 'visit', a numeric quasi-identifier"),
        (["--max-width", "visit=0"], "--max-width of 'visit' is 0"),
        (["--max-values", "ward=1.5"], "--max-values of 'ward' is 1.5"),
        (["--max-width", "visit"], "is not of the form column=number"),
        (["--max-width", "visit=5", "--algorithm", "mondrian"], "--algorithm mondrian does not keep"),
        (
            ["--max-width", "visit=1,seen_at=1", "--max-values", "ward=1"],
            "fit no class of k=5 rows within --max-width visit=1,seen_at=1 --max-values ward=1",
        ),
    ],
)
def test_bad_or_impossible_limits_are_one_error_and_write_nothing(visits_db: Path, flags, message) -> None:
    before = tables(visits_db)
    res = run_cli(
        [
            "anonymize",
            "--db",
            visits_db,
            "-t",
            "visits",
            "-k",
            "5",
            "--qi",
            "visit,seen_at,ward",
            "--sensitive",
            "dx",
            *flags,
        ]
    )
    assert_one_error(res, message)
    assert tables(visits_db) == before


def test_suggest_k_keeps_the_limits_and_counts_a_k_without_release_as_over(visits_db: Path) -> None:
    """With limits that leave more rows unplaced as k grows, a k with no release is over."""
    from sbc_sql.quality.suggest import suggest_k

    found = suggest_k(
        str(visits_db), "visits", max_loss=0.9, qi="visit,seen_at,ward", sensitive="dx",
        max_width="visit=3", max_suppression=0.05,
    )  # fmt: skip
    failed = [s for s in found.steps if s.ncp is None]
    assert failed and all(not s.under and s.failed and "fit no class" in s.failed for s in failed)
    assert found.next_k is not None and found.step(found.next_k).ncp is None
    with sbc_sql.anonymize(
        str(visits_db),
        "visits",
        found.k,
        qi="visit,seen_at,ward",
        sensitive="dx",
        max_width="visit=3",
        max_suppression=0.05,
    ) as result:
        assert result.verdict is not None and result.verdict.ok
    with pytest.raises(InputError, match="fit no class"):
        sbc_sql.anonymize(
            str(visits_db), "visits", found.next_k, qi="visit,seen_at,ward", sensitive="dx",
            max_width="visit=3", max_suppression=0.05,
        )  # fmt: skip
