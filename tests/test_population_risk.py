"""Population risk: the estimators of sbc_sql.quality.population against tables worked by
hand (the arithmetic is in each test), against the figures the tools' own tests publish,
and profile's figures on DuckDB and PostgreSQL.

Published figures used:

* ARX's ``TestRiskMetrics.testDecisionRule2`` (its data/adult.csv, all nine columns the QIs,
  population = records / fraction): the decision rule's share of population uniques is
  0.27684993883653597 by Pitman or 0.3207402393466189 by Zayatz at a fraction of 0.1,
  0.3577099234829125 at 0.2, 0.1446083531167384 at 0.01 and 0.5142895033485844 at 1; ARX
  compares them to four digits. The frequency of frequencies of that file is
  :data:`ARX_ADULT` (counted with a pandas GROUP BY over its nine columns).
* sdcMicro's ``tests/testthat/test_indivRisk.R`` (the eight weighted records of
  :data:`SDC_ROWS`, method "exact"): risks 0.01355297 (f = 3, weights 108), 0.08579129
  (f = 1, 45.5), 0.17707583 (f = 1, 17), 0.01877883 (f = 2, 100), 0.03931625 (f = 1, 123.5).
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from scipy import stats
from test_json_schema import check

import sbc_sql
from sbc_sql.errors import InputError
from sbc_sql.quality import population as P
from sbc_sql.quality import population_keys
from sbc_sql.quality.profile import profile, text

#: (sample frequency, keys) of ARX's data/adult.csv on its nine columns: 30,162 records
ARX_ADULT = (
    *((1, 15512), (2, 2098), (3, 754), (4, 375), (5, 189), (6, 155), (7, 97), (8, 73)),
    *((9, 39), (10, 37), (11, 29), (12, 18), (13, 23), (14, 14), (15, 15), (16, 9), (17, 11)),
    *((18, 10), (19, 10), (20, 5), (21, 3), (22, 4), (23, 3), (24, 2), (25, 1), (26, 3)),
    *((27, 5), (29, 1), (30, 2), (32, 1), (34, 1), (35, 1), (36, 1), (45, 1)),
)

#: sdcMicro's test table: keys A, B, C and the weight of each record
SDC_ROWS = pd.DataFrame(
    {
        "a": [2, 3, 2, 2, 3, 3, 1, 2],
        "b": [3, 3, 3, 3, 3, 3, 4, 3],
        "c": [1, 3, 1, 2, 1, 1, 1, 1],
        "weight": [18.0, 45.5, 39.0, 17.0, 92.0, 8.0, 123.5, 51.0],
    }
)
#: per record, sdcMicro's published exact risk (keys: (2,3,1) f=3 F=108; (3,3,3) f=1
#: F=45.5; (2,3,2) f=1 F=17; (3,3,1) f=2 F=100; (1,4,1) f=1 F=123.5)
SDC_RISK = [0.01355297, 0.08579129, 0.01355297, 0.17707583, 0.01877883, 0.01877883, 0.03931625, 0.01355297]


def arrays(pairs):
    return np.array([s for s, _ in pairs]), np.array([c for _, c in pairs])


def nb_expectation(f: int, p: float) -> float:
    """E[1 / (f + H)], H negative binomial (f successes of chance p), summed term by term:
    the definition the closed forms stand for."""
    h = np.arange(0, int(f * (1 - p) / p + 60 * math.sqrt(f * (1 - p)) / p + 200))
    return float(np.sum(stats.nbinom.pmf(h, f, p) / (f + h)))


# ---------------------------------------------------------------------------------------
# population uniqueness


def test_zayatz_by_hand() -> None:
    """Two sample uniques and one pair: n = 4 of N = 8 (fraction 0.5).

    P(s) = s C(N - s, n - 1) / C(N, n), C(8, 4) = 70: P(1) = C(7, 3) / 70 = 35 / 70 = 1/2,
    P(2) = 2 C(6, 3) / 70 = 40 / 70 = 4/7. Share of sample uniques unique in the population:
    c1 P(1) / (c1 P(1) + c2 P(2)) = 1 / (1 + 4/7) = 7/11. Uniques: 2 x 7/11 / 0.5 = 28/11."""
    sizes, counts = arrays([(1, 2), (2, 1)])
    assert P.zayatz(sizes, counts, 8) == pytest.approx(28 / 11, rel=1e-12)
    # the whole population sampled: the sample's uniques are the population's
    assert P.zayatz(sizes, counts, 4) == 2


def test_pitman_solves_its_likelihood_equations() -> None:
    """Twenty uniques, 6 pairs, 3 triples, 2 fours, a six: u = 32 keys, n = 20 + 12 + 9 + 8 + 6 = 55 records.
    The fit must satisfy Hoshino's equations written as the plain sums

        sum_{i<u} 1/(theta + i alpha) = sum_{i<n} 1/(theta + i)
        sum_{i<u} i/(theta + i alpha) = sum_s c_s sum_{j<s} 1/(j - alpha)

    (the module evaluates them through digamma functions), and the uniques be
    Gamma(theta + 1) / Gamma(theta + alpha) N^alpha."""
    sizes, counts = arrays([(1, 20), (2, 6), (3, 3), (4, 2), (6, 1)])
    fit = P.pitman_fit(sizes, counts)
    assert fit is not None
    theta, alpha = fit
    u, n = 32, 55
    left = sum(1 / (theta + i * alpha) for i in range(1, u)) - sum(1 / (theta + i) for i in range(1, n))
    pairs = zip(sizes.tolist(), counts.tolist(), strict=True)
    right = sum(i / (theta + i * alpha) for i in range(1, u)) - sum(
        c * sum(1 / (j - alpha) for j in range(1, s)) for s, c in pairs
    )
    assert abs(left) < 1e-9 and abs(right) < 1e-9
    expected = math.gamma(theta + 1) / math.gamma(theta + alpha) * 200**alpha
    assert P.pitman(sizes, counts, 200) == pytest.approx(expected, rel=1e-9)


def test_snb_fit_reproduces_the_sample() -> None:
    """The fitted slide negative binomial (F = 1 + X, X ~ NB(alpha, beta), K keys, each
    person drawn with the fraction) must expect the sample's keys seen, once and twice:
    the expectations summed over F term by term with scipy's negative binomial and the
    binomial chance of f of F drawn."""
    sizes, counts = arrays([(1, 20), (2, 6), (3, 3), (4, 2), (6, 1)])
    fraction = 0.3
    fit = P.snb_fit(sizes, counts, fraction)
    assert fit is not None
    alpha, beta, keys = fit
    big_f = np.arange(1, 4000)
    chance = stats.nbinom.pmf(big_f - 1, alpha, beta)
    seen = keys * float(np.sum(chance * (1 - (1 - fraction) ** big_f)))
    once = keys * float(np.sum(chance * stats.binom.pmf(1, big_f, fraction)))
    twice = keys * float(np.sum(chance * stats.binom.pmf(2, big_f, fraction)))
    assert seen == pytest.approx(32, rel=1e-6)
    assert once == pytest.approx(20, rel=1e-6)
    assert twice == pytest.approx(6, rel=1e-6)
    assert P.snb(sizes, counts, 55 / fraction) == pytest.approx(keys * beta**alpha, rel=1e-12)


@pytest.mark.parametrize(
    ("fraction", "estimator", "published"),
    [
        (0.01, "pitman", 0.1446083531167384),
        (0.1, "pitman", 0.27684993883653597),
        (0.1, "zayatz", 0.3207402393466189),
        (0.2, "zayatz", 0.3577099234829125),
        (1.0, "zayatz", 0.5142895033485844),
    ],
)
def test_arx_published_shares(fraction: float, estimator: str, published: float) -> None:
    """ARX's figures on its Adult (the module's docstring), here to 9 digits where ARX
    checks 4."""
    sizes, counts = arrays(ARX_ADULT)
    n = int(np.dot(sizes, counts))
    assert n == 30162
    population = n / fraction
    found = getattr(P, estimator)(sizes, counts, population)
    assert found / population == pytest.approx(published, rel=1e-9)


def test_arx_decision_rule_at_small_fractions() -> None:
    """At 0.01 and 0.1 the rule takes Pitman, as ARX's test says (its share above); at 1 the
    share is the sample's uniques, 15,512 / 30,162."""
    sizes, counts = arrays(ARX_ADULT)
    for fraction, share in ((0.01, 0.1446083531167384), (0.1, 0.27684993883653597)):
        u = P.uniqueness(sizes, counts, 30162 / fraction)
        assert u.chosen == "pitman" and u.share == pytest.approx(share, rel=1e-9)
    whole = P.uniqueness(sizes, counts, 30162)
    assert whole.share == pytest.approx(15512 / 30162, rel=1e-12)


def test_decision_rule_branches() -> None:
    """Dankar et al.: at or below 10 %, Pitman, else Zayatz; above, the smaller of SNB and
    Zayatz, Zayatz when SNB has no answer."""
    assert P.decide(0.05, 3.0, 2.0, 1.0) == ("pitman", 2.0)
    assert P.decide(0.1, 3.0, 2.0, 1.0) == ("pitman", 2.0)
    assert P.decide(0.05, 3.0, None, 1.0) == ("zayatz", 3.0)
    assert P.decide(0.5, 3.0, 2.0, 1.0) == ("snb", 1.0)
    assert P.decide(0.5, 1.0, 2.0, 3.0) == ("zayatz", 1.0)
    assert P.decide(0.5, 3.0, 2.0, None) == ("zayatz", 3.0)
    none = P.uniqueness(*arrays([(2, 3), (5, 1)]), 1000)
    assert (none.chosen, none.estimate, none.sample_uniques) == ("none", 0.0, 0)


# ---------------------------------------------------------------------------------------
# individual risk


def test_individual_risk_closed_forms_by_hand() -> None:
    """q = p / (1 - p).

    f = 1, p = 1/4: q = 1/3, r = (1/3) ln 4 = 0.4620981...
    f = 2, p = 1/2: q = 1, r = 1 - ln 2 = 0.3068528...
    f = 3, p = 1/2: A = (p^-2 - 1) / 2 = 3/2; B_0 = 2^2 / (1 x 1) x (p^-1 - 1) / (p^-2 - 1)
    = 4 x 1/3 = 4/3; r = q^3 (A (1 - B_0) - ln p) = 3/2 x (-1/3) + ln 2 = ln 2 - 1/2
    = 0.1931471...
    Each equals E[1 / F] summed term by term."""
    cases = [(1, 0.25, math.log(4) / 3), (2, 0.5, 1 - math.log(2)), (3, 0.5, math.log(2) - 0.5)]
    for f, p, by_hand in cases:
        found = P.individual_risk(np.array([f]), np.array([f / p]))[0]
        assert found == pytest.approx(by_hand, rel=1e-12)
        assert found == pytest.approx(nb_expectation(f, p), rel=1e-10)


def test_individual_risk_larger_f() -> None:
    """f >= 3 by the series (p f <= 1) and by the quadrature beyond, against the sum of the
    definition; the series alone is off by orders of magnitude at f = 50, p = 0.5."""
    for f, p in ((4, 0.2), (10, 0.05), (20, 0.04), (20, 0.3), (50, 0.5), (1000, 0.01), (5, 0.9)):
        found = P.individual_risk(np.array([f]), np.array([f / p]))[0]
        assert found == pytest.approx(nb_expectation(f, p), rel=1e-9), (f, p)
    assert abs(P._series(50, 0.5) - nb_expectation(50, 0.5)) > 1
    # the whole population in the table: 1 / f
    assert P.individual_risk(np.array([4]), np.array([4.0]))[0] == 0.25


def test_individual_risk_sdcmicro_published() -> None:
    """sdcMicro's exact figures (the module's docstring), to the 8 digits it prints; the
    global risk their mean, the expected re-identifications their sum."""
    f = np.array([3, 1, 1, 2, 1])
    weight = np.array([108.0, 45.5, 17.0, 100.0, 123.5])
    published = [0.01355297, 0.08579129, 0.17707583, 0.01877883, 0.03931625]
    assert P.individual_risk(f, weight) == pytest.approx(published, abs=5e-9)
    summed = P.individual(f, weight, np.ones(5, dtype=np.int64))
    assert summed.expected_reidentifications == pytest.approx(sum(SDC_RISK), abs=4e-8)
    assert summed.global_risk == pytest.approx(sum(SDC_RISK) / 8, abs=5e-9)
    assert summed.highest == pytest.approx(0.17707583, abs=5e-9)
    # records above 5 %: the two lone keys of 45.5 and 17 (8.6 %, 17.7 %)
    assert (summed.above_20, summed.above_10, summed.above_5) == (0, 1, 2)


# ---------------------------------------------------------------------------------------
# profile, on each engine


def test_profile_population_on_engine(engine) -> None:
    """sdcMicro's table through profile: weights and a fraction, the same figures on every
    engine, equal to the estimators over a pandas GROUP BY of the rows."""
    database = engine.frame(SDC_ROWS, {"a": "INTEGER", "b": "INTEGER", "c": "INTEGER", "weight": "DOUBLE"})
    weighted = profile(database, "t", qi="a,b,c", sample_weights="weight")
    r = weighted.population
    assert r is not None and r.basis == "weights" and r.weights_column == "weight"
    assert r.population == pytest.approx(394.0) and r.records == 8
    assert r.expected_reidentifications == pytest.approx(sum(SDC_RISK), abs=4e-8)
    assert r.global_risk == pytest.approx(sum(SDC_RISK) / 8, abs=5e-9)
    assert r.sample_uniques == 3
    weight_column = next(c for c in weighted.columns if c.name == "weight")
    assert weight_column.role == "insensitive" and "--sample-weights" in weight_column.reason

    sampled = profile(database, "t", qi="a,b,c", sampling_fraction=0.02)
    s = sampled.population
    assert s is not None and s.population == pytest.approx(400.0)
    groups = SDC_ROWS.groupby(["a", "b", "c"]).size()
    expected = population_keys.from_sizes(groups.to_numpy(), [1] * len(groups), 0.02)
    found, wanted = s.as_dict(), expected.as_dict()
    assert found.keys() == wanted.keys()
    for key, value in wanted.items():
        assert found[key] == (pytest.approx(value, rel=1e-12) if isinstance(value, float) else value), key
    assert "Risk in the population" in text(sampled)
    assert profile(database, "t", qi="a,b,c").population is None


def test_profile_says_when_not_asked(engine) -> None:
    database = engine.frame(SDC_ROWS)
    assert "Population risk: not estimated" in text(profile(database, "t", qi="a,b,c"))


# ---------------------------------------------------------------------------------------
# bad input


@pytest.mark.parametrize("fraction", [0.0, -0.5, 1.5, float("nan")])
def test_fraction_outside_range(fraction: float) -> None:
    with pytest.raises(InputError, match=r"--sampling-fraction .* is outside \(0, 1\]"):
        population_keys.basis(fraction, None)


def test_bad_weights_are_one_error_line(engine, cli) -> None:
    rows = SDC_ROWS.assign(
        label=["x"] * 8,
        light=[1.0] * 7 + [0.5],
        gaps=[1.0] * 6 + [None, None],
    )
    database = engine.frame(rows)
    cases = [
        ("label", "is of type"),
        ("light", "has 1 rows weighing less than 1"),
        ("gaps", "is NULL on 2 rows"),
        ("nope", "does not exist"),
    ]
    for column, said in cases:
        with pytest.raises(InputError, match=f"column '{column}' given to --sample-weights {said}"):
            profile(database, "t", qi="a,b,c", sample_weights=column)
    with pytest.raises(InputError, match="both --sampling-fraction and --sample-weights"):
        profile(database, "t", qi="a,b,c", sample_weights="weight", sampling_fraction=0.1)


def test_cli_options(tmp_path, make_table, cli) -> None:
    import duckdb

    path = tmp_path / "s.duckdb"
    with duckdb.connect(str(path)) as con:
        make_table(con, "t", SDC_ROWS)
    res = cli(["profile", "--db", path, "-t", "t", "--qi", "a,b,c", "--sampling-fraction", "2", "-q"])
    lines = res.stderr.strip().splitlines()
    assert res.exit_code == 1 and len(lines) == 1
    assert lines[0].startswith("Error: --sampling-fraction 2.0 is outside (0, 1]")
    res = cli(["profile", "--db", path, "-t", "t", "--qi", "a,b,c", "--sample-weights", "weight", "-q"])
    assert res.exit_code == 0 and "expected re-identifications" in res.stdout
    for more in (["--sample-weights", "weight"], ["--sampling-fraction", "0.1"], []):
        res = cli(["profile", "--db", path, "-t", "t", "--qi", "a,b,c", *more, "--json", "-q"])
        doc = check("profile", res.stdout)
        assert (doc["population"] is None) == (not more)


# ---------------------------------------------------------------------------------------
# evaluate: the release's risk in the population, on each engine


def survey(n: int = 240) -> pd.DataFrame:
    """A sample of n records: three QIs and a weight of 20 to 80 people per record."""
    i = np.arange(n)
    return pd.DataFrame(
        {
            "age": 20 + (i * 7) % 50,
            "zip": [f"Z{(j * 3) % 11}" for j in i],
            "sex": ["F" if j % 3 else "M" for j in i],
            "w": 20.0 + (i * 13) % 61,
        }
    )


RELEASE_QIS = "age_min, age_max, age_has_null, zip, sex"


def test_evaluate_population_on_engine(engine) -> None:
    """Each distinct generalized tuple of the release is one key: its sizes and weights read
    here by a hand-written GROUP BY over the release's QI columns, the figures expected of
    the estimators over them; the same on every engine."""
    from sbc_sql import engines
    from sbc_sql.quality.evaluate import evaluate

    database = engine.frame(survey(), {"age": "INTEGER", "w": "DOUBLE"})
    with sbc_sql.anonymize(database, "t", 4, output="r", qi=["age", "zip", "sex"], keep=["w"]):
        pass
    sampled = evaluate(database, "t", "r", queries=0, sampling_fraction=0.05).population
    weighted = evaluate(database, "t", "r", queries=0, sample_weights="w").population
    with engines.reading(database, ()) as e:
        rows = e.fetch_all(f"SELECT COUNT(*), SUM(w) FROM r GROUP BY {RELEASE_QIS}")
    f = np.array([int(r[0]) for r in rows])
    weight = np.array([float(r[1]) for r in rows])
    assert sampled is not None and weighted is not None
    assert sampled.records == weighted.records == int(f.sum()) == 240
    assert sampled.sample_uniques == 0 and sampled.population_uniques == 0.0 and sampled.model == "none"
    ones = np.ones(len(f), dtype=np.int64)
    expected = population_keys.assemble(f, f / 0.05, ones, 0.05, "sampling fraction", None)
    assert sampled.global_risk == pytest.approx(expected.global_risk, rel=1e-12)
    assert sampled.expected_reidentifications == pytest.approx(expected.expected_reidentifications, rel=1e-12)
    by_weight = P.individual(f, weight, ones)
    assert weighted.population == pytest.approx(float(weight.sum()))
    assert weighted.expected_reidentifications == pytest.approx(
        by_weight.expected_reidentifications, rel=1e-9
    )
    assert weighted.highest_individual_risk == pytest.approx(by_weight.highest, rel=1e-9)
    # the release's keys are at least k: each risk at most 1 / 4, below the prosecutor's
    assert weighted.highest_individual_risk < 0.25


def test_evaluate_json_and_text(tmp_path, make_table, cli) -> None:
    import duckdb

    path = tmp_path / "e.duckdb"
    with duckdb.connect(str(path)) as con:
        make_table(con, "t", survey(), {"age": "INTEGER", "w": "DOUBLE"})
    base = ["--db", path, "--original", "t", "--release", "r"]
    res = cli(
        [
            "anonymize",
            "--db",
            path,
            "-t",
            "t",
            "-k",
            "4",
            "-o",
            "r",
            "--qi",
            "age,zip,sex",
            "--keep",
            "w",
            "-q",
        ]
    )
    assert res.exit_code == 0, res.stderr
    res = cli(["evaluate", *base, "--queries", "0", "--sampling-fraction", "0.05", "--json", "-q"])
    doc = check("evaluate", res.stdout)
    assert doc["population_risk"]["model"]["value"] == "none"
    assert doc["population_risk"]["sampling_fraction"]["value"] == 0.05
    res = cli(["evaluate", *base, "--queries", "0", "-q"])
    assert "Population risk: not estimated" in res.stdout and "Risk in the population" not in res.stdout
    res = cli(["evaluate", *base, "--queries", "0", "--sample-weights", "age", "-q"])
    lines = res.stderr.strip().splitlines()
    assert res.exit_code == 1 and len(lines) == 1
    assert lines[0].startswith(
        "Error: column 'age' given to --sample-weights is not a column 'r' releases as it is"
    )


def test_report_shows_the_population_risk(tmp_path, make_table) -> None:
    """The page's section 2 gives the figures before and after, with the fraction used; its
    section 8 every figure of evaluate's group; without the options it says they were not
    estimated."""
    import duckdb

    from sbc_sql.quality.html_report import report

    path = tmp_path / "h.duckdb"
    with duckdb.connect(str(path)) as con:
        make_table(con, "t", survey(), {"age": "INTEGER", "w": "DOUBLE"})
    sbc_sql.anonymize(path, "t", 4, output="r", qi=["age", "zip", "sex"], keep=["w"])
    found = report(path, "t", "r", curve_k=(), sampling_fraction=0.05)
    before, after = found.population_before, found.population_after
    assert before is not None and after is not None
    assert after == found.evaluation.population and before.records == 240
    page = found.html
    assert 'data-basis="sampling fraction" data-fraction="0.05"' in page
    assert "a sampling fraction of 5.00 %" in page
    assert f'data-population="expected_reidentifications">{before.expected_reidentifications:,.1f}<' in page
    assert "Risk in the population" in page and "expected re-identifications" in page
    weighted = report(path, "t", "r", curve_k=(), sample_weights="w")
    assert "the weights of column <code>w</code>" in weighted.html
    plain = report(path, "t", "r", curve_k=())
    assert plain.population_before is None and "Risk in the population: not estimated" in plain.html
