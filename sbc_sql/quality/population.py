"""Population risk: what a sample's records risk in the population it was drawn from.

The risk figures of :mod:`sbc_sql.quality.profile` and :mod:`sbc_sql.quality.evaluate` are
the table's own: a record alone in the table is called unique. When the table is a
*sample* of a population (a survey, an extract), what matters is whether the record is
unique in the population, which the sample alone does not show: these estimators infer it
from the sample's frequencies and either the sampling fraction (every record stands for
1 / fraction people) or a weight per record (the people it stands for).

Pure functions over numpy arrays, no SQL: the frequencies come from the database
(``sql/templates/population_keys.sql``). A *key* is a combination of QI values (an
equivalence class); its *sample frequency* f is its records in the table, its estimated
*population frequency* F the sum of their weights (f / fraction with a fraction). The
*frequency of frequencies* is how many keys have each f: ``sizes`` (distinct f, rising)
and ``counts`` (keys of that size).

Population uniqueness (how many keys, hence people, are alone in the population):

* **Zayatz** (L. Zayatz, *Estimation of the number of unique population elements using a
  sample*, Proc. Survey Research Methods Section, ASA, 1991): the share of sample uniques
  that are population uniques, from the hypergeometric chance that a key of each sample
  size shows once in the sample; uniques = (sample uniques x that share) / fraction.
* **Pitman** (N. Hoshino, *Applying Pitman's sampling formula to microdata disclosure
  risk assessment*, J. Official Statistics 17(4), 2001): the key sizes follow Pitman's
  two-parameter sampling formula; its parameters (theta, alpha) are the maximum-likelihood
  ones, and the population uniques Gamma(theta + 1) / Gamma(theta + alpha) x N^alpha.
* **SNB** (slide negative binomial; G. Chen and S. Keller-McNulty, *Estimation of
  identification disclosure risk in microdata*, J. Official Statistics 14(1), 1998): a
  key's population size is 1 + a negative binomial (alpha, beta) over K keys, each person
  drawn with the fraction; population uniques K x beta^alpha. The parameters here are
  those whose expected keys of sample size 1 and 2 and whose expected keys seen at all
  equal the sample's (a moment fit with K as a third unknown).
* **Decision rule** (F. Dankar, K. El Emam, A. Neisa, T. Roffey, *Estimating the
  re-identification risk of clinical data sets*, BMC Medical Informatics and Decision
  Making 12:66, 2012): with a fraction of 10 % or less, Pitman (Zayatz when it has no
  answer); above, the smaller of Zayatz and SNB (Zayatz when SNB has none).

Individual risk (F. Benedetti and L. Franconi, *Statistical and technological solutions for
controlled data dissemination*, Pre-proceedings of New Techniques and Technologies for
Statistics, 1998; as in mu-Argus and sdcMicro): a record's risk is the expected 1 / F of
its key given the sample, F - f following a negative binomial with f successes of chance
p = f / F_hat (F_hat the sum of the key's weights):

    r = E[1 / F] = sum over h >= 0 of 1 / (f + h) x C(f + h - 1, h) p^f (1 - p)^h

whose closed forms are, with q = p / (1 - p),

    f = 1:  q log(1 / p)
    f = 2:  q - q^2 log(1 / p)
    f >= 3: q^f ((p^(1 - f) - 1) / (f - 1) x (1 + sum_{m=0}^{f-3} (-1)^(m+1) prod_{i=0}^{m} B_i)
                 + (-1)^f log p),
            B_i = (f - 1 - i)^2 / ((i + 1)(f - 2 - i)) x (p^(i + 2 - f) - 1) / (p^(i + 1 - f) - 1)

and a key whose weights add to its size (p = 1: the whole population is in the table) has
risk 1 / f. The alternating sum of f >= 3 loses its digits once p f grows (its terms
outgrow their sum; at f = 50, p = 0.5 it is off by orders of magnitude) and overflows for a
small p and a large f; there the same expectation is taken from its integral form. With
x = p t / (1 - (1 - p) t) and then x = exp(-s / f), E[1 / F] = int_0^1 t^(f-1)
(p / (1 - (1 - p) t))^f dt becomes

    r = p / f x int_0^inf exp(-s) / (p + (1 - p) exp(-s / f)) ds

a smooth integrand bounded by 1 / p, taken by Gauss-Laguerre quadrature (f = 1 gives back
q log(1 / p)). The **global risk** is the mean of the records' risks, the **expected
re-identifications** their sum.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from scipy import optimize, special

#: the decision rule's threshold: at or below this fraction, Pitman
PITMAN_AT_MOST = 0.1
#: the series of f >= 3 is kept while p f stays at or below this (its terms stay near
#: their sum; beyond, the quadrature)
SERIES_UP_TO = 1.0
#: Gauss-Laguerre nodes of the quadrature
NODES = 64


@dataclass(frozen=True)
class Uniqueness:
    """Estimated population uniques by each estimator (None: it found no answer)."""

    population: float
    sample_uniques: int
    zayatz: float | None
    pitman: float | None
    snb: float | None
    #: the decision rule's choice ('pitman', 'zayatz', 'snb') and its estimate
    chosen: str
    estimate: float

    @property
    def share(self) -> float:
        """The chosen estimate over the population: the share of people unique in it."""
        return self.estimate / self.population if self.population else 0.0


@dataclass(frozen=True)
class Individual:
    """The Benedetti-Franconi individual risk over the records."""

    #: mean over records of their risk
    global_risk: float
    #: sum over records: the re-identifications an intruder may expect
    expected_reidentifications: float
    highest: float
    #: records whose risk is above 20 %, 10 %, 5 %
    above_20: int
    above_10: int
    above_5: int


# ---------------------------------------------------------------------------------------
# frequency of frequencies


def histogram(
    f: Sequence[int] | np.ndarray, keys: Sequence[int] | np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """(sizes, counts): the distinct sample frequencies, rising, and how many keys have each,
    from rows (f, how many keys have this f and whatever else they were grouped by)."""
    f_arr = np.asarray(f, dtype=np.int64)
    k_arr = np.asarray(keys, dtype=np.int64)
    sizes, where = np.unique(f_arr, return_inverse=True)
    counts = np.bincount(where, weights=k_arr, minlength=len(sizes)).astype(np.int64)
    keep = counts > 0
    return sizes[keep], counts[keep]


def _of_size(sizes: np.ndarray, counts: np.ndarray, size: int) -> int:
    hit = np.nonzero(sizes == size)[0]
    return int(counts[hit[0]]) if len(hit) else 0


# ---------------------------------------------------------------------------------------
# population uniqueness


def zayatz(sizes: np.ndarray, counts: np.ndarray, population: float) -> float | None:
    """Zayatz's estimate of population uniques (see the module).

    A key of population size s yields exactly one record of n drawn from N with the
    hypergeometric chance P(s) = s C(N - s, n - 1) / C(N, n); the sample's keys stand for the
    population's sizes. The share of sample uniques unique in the population is
    c1 P(1) / sum_s c_s P(s), and the population uniques c1 x share / (n / N).
    """
    n = float(np.dot(sizes, counts))
    c1 = _of_size(sizes, counts, 1)
    if c1 == 0:
        return 0.0
    big_n = float(population)
    if n >= big_n:
        return float(c1)
    s = sizes.astype(float)
    ok = s <= big_n - n + 1
    log_p = np.full(len(s), -np.inf)
    so = s[ok]
    log_p[ok] = np.log(so) + _log_choose(big_n - so, n - 1) - _log_choose(np.array([big_n]), n)
    weights = counts * np.exp(log_p - log_p[0])
    share = c1 / float(np.sum(weights))
    return c1 * share * big_n / n


def _log_choose(a: np.ndarray, b: float) -> np.ndarray:
    out: np.ndarray = special.gammaln(a + 1) - special.gammaln(b + 1) - special.gammaln(a - b + 1)
    return out


def pitman(sizes: np.ndarray, counts: np.ndarray, population: float) -> float | None:
    """Hoshino's estimate by Pitman's sampling formula (see the module): with the parameters
    of :func:`pitman_fit`, Gamma(theta + 1) / Gamma(theta + alpha) x N^alpha; None when the
    fit has no answer or the estimate is outside [0, N]."""
    if _of_size(sizes, counts, 1) == 0:
        return 0.0
    fit = pitman_fit(sizes, counts)
    if fit is None:
        return None
    theta, alpha = fit
    uniques = math.exp(math.lgamma(theta + 1) - math.lgamma(theta + alpha) + alpha * math.log(population))
    return uniques if 0 <= uniques <= population else None


def pitman_fit(sizes: np.ndarray, counts: np.ndarray) -> tuple[float, float] | None:
    """The maximum-likelihood (theta, alpha) of Pitman's sampling formula for the sample.

    The likelihood of the sample's partition under Pitman's formula with parameters
    (theta, alpha) is maximal where (psi the digamma function, u the keys, n the records)

        sum_{i=1}^{u-1} 1 / (theta + i alpha) = psi(theta + n) - psi(theta + 1)
        sum_{i=1}^{u-1} i / (theta + i alpha) = sum_s c_s (psi(s - alpha) - psi(1 - alpha))

    solved from the moment guess Hoshino gives (alpha < 0 is Pitman's finite case: some
    theta / -alpha categories). None when no root with theta >= 0 and alpha < 1, alpha != 0
    is found.
    """
    c1 = _of_size(sizes, counts, 1)
    c2 = _of_size(sizes, counts, 2) or 1
    u = float(np.sum(counts))
    n = float(np.dot(sizes, counts))
    c = c1 * (c1 - 1) / c2
    denominator = 2 * c1 * u + c1 * c - n * c
    if denominator == 0:
        return None
    theta0 = (n * u * c - c1 * (n - 1) * (2 * u + c)) / denominator
    alpha0 = (theta0 * (c1 - n) + (n - 1) * c1) / (n * u)
    s = sizes.astype(float)
    cs = counts.astype(float)

    i = np.arange(1, int(u), dtype=float)

    def equations(x: np.ndarray) -> np.ndarray:
        theta, alpha = float(x[0]), float(x[1])
        if alpha >= 1 or theta < 0 or theta + (u - 1) * min(alpha, 0.0) <= 0:
            return np.array([1e6, 1e6])
        terms = 1 / (theta + i * alpha)
        left = float(np.sum(terms)) - (special.digamma(theta + n) - special.digamma(theta + 1))
        right = float(np.dot(i, terms)) - float(
            np.dot(cs, special.digamma(s - alpha) - special.digamma(1 - alpha))
        )
        return np.array([left, right])

    start = np.array([max(theta0, 1e-6), min(alpha0, 1 - 1e-6)])
    found = optimize.root(equations, start, method="hybr")
    theta, alpha = (float(v) for v in found.x)
    if not found.success or alpha >= 1 or alpha == 0 or theta < 0:
        return None
    if np.max(np.abs(equations(found.x))) > 1e-8:
        return None
    return theta, alpha


def _snb_moments(alpha: float, beta: float, fraction: float) -> tuple[float, float, float]:
    """Per population key, under the slide negative binomial: the chance it is seen in the
    sample, that it shows once, that it shows twice.

    With F = 1 + X, X ~ NB(alpha, beta) (P(X = x) = C(x + alpha - 1, x) beta^alpha
    (1 - beta)^x), q = 1 - fraction and d = (1 - beta) q, G(q) = E[q^X] = (beta / (1 - d))^alpha:
    seen = 1 - q G; once = fraction E[F q^(F - 1)] = fraction G (1 + alpha d / (1 - d));
    twice = fraction^2 / 2 E[F (F - 1) q^(F - 2)]
          = fraction^2 / 2 alpha beta^alpha (1 - beta) (1 - d)^-(alpha + 2) (2 - (1 - alpha) d).
    """
    q = 1 - fraction
    d = (1 - beta) * q
    g = (beta / (1 - d)) ** alpha
    seen = 1 - q * g
    once = fraction * g * (1 + alpha * d / (1 - d))
    twice = (
        fraction**2 / 2 * alpha * beta**alpha * (1 - beta) * (1 - d) ** (-(alpha + 2)) * (2 - (1 - alpha) * d)
    )
    return seen, once, twice


def snb(sizes: np.ndarray, counts: np.ndarray, population: float) -> float | None:
    """The slide negative binomial estimate of population uniques (see the module): with
    (alpha, beta, K) of :func:`snb_fit`, K beta^alpha; None when the fit has no answer or the
    estimate is outside [0, N]."""
    c1 = _of_size(sizes, counts, 1)
    if c1 == 0:
        return 0.0
    n = float(np.dot(sizes, counts))
    if n >= population:
        return float(c1)
    fit = snb_fit(sizes, counts, n / population)
    if fit is None:
        return None
    alpha, beta, keys = fit
    uniques = keys * beta**alpha
    return uniques if 0 <= uniques <= population else None


def snb_fit(sizes: np.ndarray, counts: np.ndarray, fraction: float) -> tuple[float, float, float] | None:
    """(alpha, beta, K) of the slide negative binomial: (alpha, beta) such that the expected
    shares of the seen keys showing once and twice equal the sample's c1 / u and c2 / u
    (least squares from a few starts), then K = u / P(seen). None when no fit reaches the
    sample's shares."""
    c1 = _of_size(sizes, counts, 1)
    u = float(np.sum(counts))
    c2 = _of_size(sizes, counts, 2)
    target = np.array([c1 / u, c2 / u])

    def residual(x: np.ndarray) -> np.ndarray:
        alpha, beta = math.exp(float(x[0])), float(special.expit(float(x[1])))
        seen, once, twice = _snb_moments(alpha, beta, fraction)
        out: np.ndarray = np.array([once / seen - target[0], twice / seen - target[1]])
        return out

    best = None
    for start in ((0.0, 0.0), (-2.0, -3.0), (2.0, 3.0), (-4.0, -6.0)):
        fit = optimize.least_squares(residual, np.array(start), xtol=1e-12, ftol=1e-12, gtol=1e-12)
        if best is None or fit.cost < best.cost:
            best = fit
    assert best is not None
    if np.max(np.abs(best.fun)) > 1e-6 * max(1.0, float(np.max(target))):
        return None
    alpha, beta = math.exp(float(best.x[0])), float(special.expit(float(best.x[1])))
    seen, _, _ = _snb_moments(alpha, beta, fraction)
    return alpha, beta, u / seen


def uniqueness(sizes: np.ndarray, counts: np.ndarray, population: float) -> Uniqueness:
    """Every estimator and the decision rule's choice (see the module).

    ``population`` is N (records / fraction, or the sum of the weights); no estimator runs
    without sample uniques (the estimate is 0).
    """
    n = float(np.dot(sizes, counts))
    c1 = _of_size(sizes, counts, 1)
    if c1 == 0:
        return Uniqueness(population, 0, 0.0, 0.0, 0.0, "none", 0.0)
    z, p, s = (
        zayatz(sizes, counts, population),
        pitman(sizes, counts, population),
        snb(sizes, counts, population),
    )
    chosen, estimate = decide(n / population, z, p, s)
    return Uniqueness(population, c1, z, p, s, chosen, estimate)


def decide(fraction: float, z: float | None, p: float | None, s: float | None) -> tuple[str, float]:
    """Dankar et al.'s rule: (estimator, estimate). At or below :data:`PITMAN_AT_MOST`,
    Pitman, or Zayatz when Pitman has no answer; above, the smaller of Zayatz and SNB, or
    Zayatz when SNB has none."""
    if fraction <= PITMAN_AT_MOST:
        if p is not None and p > 0:
            return "pitman", p
        return "zayatz", z or 0.0
    if s is not None and s > 0 and (z is None or s <= z):
        return "snb", s
    return "zayatz", z or 0.0


# ---------------------------------------------------------------------------------------
# individual risk


def individual_risk(f: np.ndarray, weight: np.ndarray) -> np.ndarray:
    """The Benedetti-Franconi risk of a record of each key: ``f`` its sample frequency,
    ``weight`` the sum of its records' weights (formulas: the module)."""
    f_arr = np.asarray(f, dtype=np.int64)
    big_f = np.asarray(weight, dtype=float)
    p = np.minimum(f_arr / big_f, 1.0)
    out = np.empty(len(f_arr), dtype=float)
    for i, (fi, pi) in enumerate(zip(f_arr.tolist(), p.tolist(), strict=True)):
        out[i] = _risk(int(fi), float(pi))
    return out


def _risk(f: int, p: float) -> float:
    if p >= 1.0 or f <= 0:
        return 1.0 / f if f > 0 else 0.0
    q = p / (1 - p)
    if f == 1:
        return q * math.log(1 / p)
    if f == 2:
        return q - q * q * math.log(1 / p)
    if p * f <= SERIES_UP_TO:
        try:
            r = _series(f, p)
        except (OverflowError, ZeroDivisionError):
            r = math.nan
        # E[1 / F] lies between 1 / E[F] = p / f (Jensen) and 1 / f
        if math.isfinite(r) and p / f <= r <= 1 / f:
            return r
    return _quadrature(f, p)


def _series(f: int, p: float) -> float:
    """The closed form of f >= 3 (the module)."""
    a = (p ** (1 - f) - 1) / (f - 1)

    def b(i: int) -> float:
        return (f - 1 - i) ** 2 / ((i + 1) * (f - 2 - i)) * (p ** (i + 2 - f) - 1) / (p ** (i + 1 - f) - 1)

    total, product = 0.0, 1.0
    for m in range(f - 2):
        product *= b(m)
        total += (-1) ** (m + 1) * product
    return float((p / (1 - p)) ** f * (a * (1 + total) + (-1) ** f * math.log(p)))


_NODES, _WEIGHTS = np.polynomial.laguerre.laggauss(NODES)


def _quadrature(f: int, p: float) -> float:
    """E[1 / F] as p / f x int_0^inf exp(-s) / (p + (1 - p) exp(-s / f)) ds (the module)."""
    return p / f * float(np.dot(_WEIGHTS, 1 / (p + (1 - p) * np.exp(-_NODES / f))))


def individual(f: np.ndarray, weight: np.ndarray, keys: np.ndarray) -> Individual:
    """The records' risks summed up: rows of (f, the sum of a key's weights, how many keys
    share both); each key's f records have its risk."""
    risk = individual_risk(f, weight)
    records = np.asarray(f, dtype=float) * np.asarray(keys, dtype=float)
    total = float(np.dot(risk, records))
    n = float(np.sum(records))
    return Individual(
        global_risk=total / n if n else 0.0,
        expected_reidentifications=total,
        highest=float(np.max(risk)) if len(risk) else 0.0,
        above_20=int(np.sum(records[risk > 0.20])),
        above_10=int(np.sum(records[risk > 0.10])),
        above_5=int(np.sum(records[risk > 0.05])),
    )
