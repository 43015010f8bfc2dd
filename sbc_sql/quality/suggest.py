"""Suggest k: the largest k whose information loss stays under a threshold derived from the
data's domain, the release's purpose and its criticality (or given directly).

**The threshold.** Either ``max_loss`` (a total NCP in (0, 1)) or a *sensitivity score*
from three inputs the publisher knows before any run, each scored 25 (low) to 100 (very
high), weighed purpose 0.5, criticality 0.3, domain 0.2::

    score = 0.2 * DOMAIN[domain] + 0.5 * PURPOSE[purpose] + 0.3 * CRITICALITY[criticality]

with the domain scored medical 75, financial 100, sports 25, public (open data) 25,
military 75, sales 50; the purpose review 25, statistics (simple statistics) 50,
complex-statistics 75, data-mining 100; the criticality (how identifying and sensitive
the QIs and sensitive columns are) low 25, middle 50, high 75, very-high 100. The score
lies in [25, 100]. It is read as the *allowed* loss: the more sensitive the release, the
more of its detail may be given up for privacy, so a higher score allows a higher
threshold. The mapping to a total NCP is sbc-sql's own choice, linear and increasing::

    max_loss = score / 500          (score 25 -> 0.05, 50 -> 0.10, 100 -> 0.20)

**The search.** The table is prepared once (statistics and pulled rows); each k tried is
clustered, then written, verified and measured in one transaction that is rolled back:
nothing is kept, but every figure is that of a release that passed verification with the
criteria asked. k is doubled from ``k_min`` (2, 4, 8, ...) until the total NCP exceeds the
threshold or k reaches the limit (``k_max``, at most half the rows); then the gap between
the last k under the threshold and the first over it is bisected. The result is a k under
the threshold whose next larger k tried is over it. NCP grows with k, but not strictly:
a k is judged by its own measure only, and a k beyond the first one over the threshold is
not tried, so a dip back under it further up is not looked for. With ``apply`` the chosen
k's classes are published as ``anonymize`` would (verified, under ``output`` or
``<table>_k<k>``, which an engine that writes files puts beside a file input).

**A trial on each engine.** DuckDB and PostgreSQL write a trial's tables inside a
transaction and roll it back (its working tables are dropped first; the class labels,
uploaded for the trial alone, go as it ends). Spark has no transactional DDL, so a trial
writes no release at all: until a commit, every table the stages create is a temporary view
of the session, and only the commit, which a trial never reaches, writes Parquet folders or
catalog tables; the rollback drops the trial's views. When Spark's workers cluster the rows,
their labels are a cached view too, dropped with the trial whatever happens to it (a
failure, an interruption); ``apply`` then clusters the chosen k once more, which gives the
trial's classes (the blocks are cut from a seeded sample, each clustered in row-id order).

The risk at each k is the prosecutor risk of its release (as :mod:`sbc_sql.quality.profile`
defines it on raw QIs): the highest is 1 / the smallest class, the mean over the released
records is classes / released rows.
"""

from __future__ import annotations

import contextlib
import secrets
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import asdict, dataclass, field
from typing import Any

from .. import choices, engines
from ..errors import InputError
from ..hierarchies import HierarchySpec
from ..privacy.criteria import Criteria, takes_criteria
from ..run import make_options
from ..run.cluster import Clustering, cluster
from ..run.lines import warnings_only
from ..run.prepare import prepare, ready
from ..run.publish import publish

#: the scores of each input, 25 (low) to 100 (very high)
DOMAIN, PURPOSE, CRITICALITY = choices.DOMAIN, choices.PURPOSE, choices.CRITICALITY
#: the weights of domain, purpose and criticality in the score
WEIGHTS = {"domain": 0.2, "purpose": 0.5, "criticality": 0.3}
#: score / SCALE is the largest total NCP allowed
SCALE = 500.0


@dataclass(frozen=True)
class Step:
    """One k tried: its release's figures (verified, then rolled back)."""

    k: int
    #: None when no release could be made at this k (see ``failed``)
    ncp: float | None
    under: bool
    classes: int
    smallest: int
    released: int
    suppressed: int
    #: prosecutor risk: 1 / the smallest class, and the mean over released records
    risk_highest: float
    risk_mean: float
    seconds: float
    #: why no release could be made at this k (rows the criteria or the per-column limits
    #: cannot place, above --max-suppression): such a k counts as over the threshold
    failed: str | None = None


@dataclass
class Suggestion:
    """What :func:`suggest_k` found: the chosen k, the threshold and every k tried."""

    k: int
    threshold: float
    #: how the threshold was derived: 'given' or the score's inputs
    derivation: dict[str, Any]
    #: every k tried, in the order tried
    steps: list[Step]
    #: the k above which nothing was tried (k_max or half the rows)
    limit: int
    #: the chosen k is the limit: every k tried up to it stayed under the threshold
    at_limit: bool
    #: the first k tried above the chosen one (over the threshold), None at the limit
    next_k: int | None
    #: the release written under apply, else None
    applied: str | None = None
    seconds: dict[str, float] = field(default_factory=dict)

    @property
    def curve(self) -> list[Step]:
        """The k tried, by k."""
        return sorted(self.steps, key=lambda s: s.k)

    def step(self, k: int) -> Step:
        return next(s for s in self.steps if s.k == k)

    def as_dict(self) -> dict[str, Any]:
        return {
            "k": self.k,
            "threshold": self.threshold,
            "derivation": dict(self.derivation),
            "limit": self.limit,
            "at_limit": self.at_limit,
            "next_k": self.next_k,
            "ncp": self.step(self.k).ncp,
            "next_ncp": self.step(self.next_k).ncp if self.next_k is not None else None,
            "runs": len(self.steps),
            "applied": self.applied,
            "seconds": {name: round(v, 3) for name, v in self.seconds.items()},
            "curve": [{**asdict(s), "seconds": round(s.seconds, 3)} for s in self.curve],
        }


def score(domain: str, purpose: str, criticality: str) -> float:
    """The sensitivity score (25 to 100) of a release from its three inputs."""
    for flag, value, table in (
        ("--domain", domain, DOMAIN),
        ("--purpose", purpose, PURPOSE),
        ("--criticality", criticality, CRITICALITY),
    ):
        if value not in table:
            raise InputError(f"{flag} '{value}' is not one of {', '.join(table)}; pick one of them")
    return (
        WEIGHTS["domain"] * DOMAIN[domain]
        + WEIGHTS["purpose"] * PURPOSE[purpose]
        + WEIGHTS["criticality"] * CRITICALITY[criticality]
    )


def threshold_of(
    max_loss: float | None = None,
    domain: str | None = None,
    purpose: str | None = None,
    criticality: str | None = None,
) -> tuple[float, dict[str, Any]]:
    """The total NCP allowed and how it was derived: ``max_loss`` or the three inputs."""
    inputs = {"domain": domain, "purpose": purpose, "criticality": criticality}
    named = [name for name, v in inputs.items() if v is not None]
    if max_loss is not None:
        if named:
            raise InputError(
                f"--max-loss {max_loss:g} and --{named[0]} both set the threshold; give --max-loss "
                "alone, or --domain, --purpose and --criticality"
            )
        if not 0 < max_loss < 1:
            raise InputError(
                f"--max-loss {max_loss:g} is outside (0, 1): it is a total NCP, 0 no loss and 1 "
                "everything generalized away; e.g. --max-loss 0.1"
            )
        return max_loss, {"from": "given", "max_loss": max_loss}
    if len(named) < 3:
        missing = [f"--{name}" for name, v in inputs.items() if v is None]
        raise InputError(
            f"the threshold needs --max-loss, or --domain, --purpose and --criticality together "
            f"({', '.join(missing)} missing); give the missing ones, or --max-loss alone"
        )
    assert domain is not None and purpose is not None and criticality is not None
    s = score(domain, purpose, criticality)
    return s / SCALE, {"from": "score", **inputs, "score": s, "scale": SCALE}


@takes_criteria
def suggest_k(
    database: Any,
    table: str,
    *,
    max_loss: float | None = None,
    domain: str | None = None,
    purpose: str | None = None,
    criticality: str | None = None,
    k_min: int = 2,
    k_max: int | None = None,
    apply: bool = False,
    output: str | None = None,
    qi: Any = (),
    sensitive: Any = (),
    drop: Any = (),
    keep: Any = (),
    allow_determinant: Any = (),
    algorithm: str = "sbca",
    max_suppression: float = 0.01,
    hierarchies: Mapping[str, HierarchySpec] | None = None,
    max_width: Mapping[str, float] | str | Iterable[str] | None = None,
    max_values: Mapping[str, int] | str | Iterable[str] | None = None,
    on_step: Callable[[Step], None] | None = None,
    log: Callable[[str], None] | None = None,
    **criteria: Any,
) -> Suggestion:
    """The largest k whose verified release of ``table`` has total NCP under the threshold
    (see the module docstring): ``max_loss``, or ``domain``, ``purpose`` and ``criticality``.
    Roles, criteria and per-column limits (``max_width``, ``max_values``) as
    :func:`sbc_sql.anonymize`; a k at which no release can be made (rows the criteria or
    limits cannot place, above ``max_suppression``) counts as over the threshold. Nothing is
    written unless ``apply``, which publishes the chosen k's release under ``output``
    (default ``<table>_k<k>``).
    ``on_step`` receives each k tried as it is measured, ``log`` the lines anonymize logs
    (by default its warnings reach a Python caller as Python warnings)."""
    threshold, derivation = threshold_of(max_loss, domain, purpose, criticality)
    if k_min < 2:
        raise InputError(f"--k-min {k_min} is below 2, the smallest class that hides anyone; e.g. --k-min 2")
    if k_max is not None and k_max < k_min:
        raise InputError(f"--k-max {k_max} is below --k-min {k_min}; raise --k-max or lower --k-min")
    if output is not None and not apply:
        raise InputError(
            f"--output '{output}' names the release --apply writes; add --apply or drop --output"
        )
    asked = Criteria(**criteria)
    engine = engines.connect(database)
    try:
        started = time.perf_counter()
        if output is not None:
            # read as anonymize reads it: a path (Spark) in one spelling, a place the engine
            # cannot keep a release in refused before any work
            place = engine.parse_name(output, output=True)
            if place.path:
                output = place.name
        trial = f"sbc_suggest_{secrets.token_hex(4)}"
        options = make_options(
            k_min,
            qi=qi,
            sensitive=sensitive,
            drop=drop,
            keep=keep,
            allow_determinant=allow_determinant,
            output=output if output is not None else trial,
            algorithm=algorithm,
            max_suppression=max_suppression,
            criteria=asked,
            max_width=max_width,
            max_values=max_values,
        )
        prepared = prepare(engine, table, options, hierarchies=hierarchies, log=log or warnings_only)
        n_rows = prepared.stats.n_rows
        limit = n_rows // 2 if k_max is None else min(k_max, n_rows // 2)
        if limit < k_min:
            raise InputError(
                f"--k-min {k_min} is above the largest k tried, {limit} (half of the {n_rows:,} rows"
                f"{'' if k_max is None else f' or --k-max {k_max}'}); lower --k-min"
            )
        prepare_seconds = time.perf_counter() - started
        steps: dict[int, Step] = {}
        best: dict[int, Clustering] = {}

        def attempt(k: int) -> bool:
            nonlocal prepared
            t = time.perf_counter()
            try:
                prepared = ready(prepared, prepared.plan_for(k, None, trial))
                clustering = cluster(prepared)
                try:
                    result = publish(prepared, clustering, commit=False)
                finally:
                    # labels kept in the engine (clustered in its workers) go with the trial,
                    # whatever happened to it; publishing drops them too, this is idempotent.
                    # A drop that fails does not hide the trial's own error: the engine's
                    # close drops what it made again
                    if clustering.run is not None and clustering.run.table is not None:
                        with contextlib.suppress(Exception):
                            engine.discard(clustering.run.table)
            except InputError as error:
                # e.g. more rows than --max-suppression fit no class at this k: over
                steps[k] = Step(k, None, False, 0, 0, 0, 0, 0.0, 0.0, time.perf_counter() - t, str(error))
                if on_step is not None:
                    on_step(steps[k])
                return False
            m = result.measures
            assert m is not None
            step = Step(
                k,
                m.total_ncp,
                m.total_ncp <= threshold,
                m.classes,
                m.smallest,
                m.released,
                m.suppressed,
                1.0 / m.smallest if m.smallest else 0.0,
                m.classes / m.released if m.released else 0.0,
                time.perf_counter() - t,
            )
            steps[k] = step
            if step.under and apply:
                best.clear()
                best[k] = clustering
            if on_step is not None:
                on_step(step)
            return step.under

        # bracket: k_min, 2 k_min, 4 k_min, ... until over the threshold or at the limit
        lo, hi = None, None
        k = k_min
        while True:
            if attempt(k):
                lo = k
                if k >= limit:
                    break
                k = min(2 * k, limit)
            else:
                hi = k
                break
        if lo is None:
            first = steps[k_min]
            if first.ncp is None:
                raise InputError(f"no release can be made at k={k_min}: {first.failed}")
            raise InputError(
                f"no k >= {k_min} stays under the threshold {threshold:.4f}: the release at k={k_min} "
                f"loses NCP {first.ncp:.4f}; allow more loss, e.g. --max-loss {_round_up(first.ncp)}"
                + (" (or a lower --k-min)" if k_min > 2 else "")
            )
        # bisect between the last k under and the first over
        while hi is not None and hi - lo > 1:
            mid = (lo + hi) // 2
            if attempt(mid):
                lo = mid
            else:
                hi = mid
        suggestion = Suggestion(
            lo,
            threshold,
            derivation,
            list(steps.values()),
            limit,
            at_limit=hi is None,
            next_k=hi,
        )
        if apply:
            # the release's name as anonymize gives it: <table>_k<k>, beside a file input on
            # an engine that writes files (Spark), or the --output given
            plan = prepared.plan_for(lo, None, output)
            run = best[lo].run
            if run is not None and run.table is not None:
                # clustered in the engine's workers: the trial's labels went with it, and the
                # same clustering is made again (its blocks are cut from a seeded sample and
                # each is clustered in row-id order, so the classes are the trial's)
                prepared = ready(prepared, plan)
                clustering = cluster(prepared)
            else:
                clustering = Clustering(plan, run)
            prepared.release_arrays()
            result = publish(prepared, clustering)
            suggestion.applied = result.release
        suggestion.seconds = {
            "prepare": prepare_seconds,
            "search": sum(s.seconds for s in steps.values()),
            "total": time.perf_counter() - started,
        }
        return suggestion
    finally:
        engine.close()


def _round_up(ncp: float) -> str:
    """A threshold just above ``ncp``, in two significant decimals."""
    step = 0.01 if ncp >= 0.01 else 0.001
    return f"{(int(ncp / step) + 1) * step:.{2 if step == 0.01 else 3}f}"


def _over(step: Step) -> str:
    """Why the next k is over: its NCP, or that no release could be made."""
    return "(no release could be made)" if step.ncp is None else f"(NCP {step.ncp:.4f})"


def text(s: Suggestion) -> str:
    """The suggestion as the command line prints it."""
    d = s.derivation
    if d["from"] == "given":
        how = "given by --max-loss"
    else:
        how = (
            f"score {d['score']:g} = 0.2 x domain {d['domain']} + 0.5 x purpose {d['purpose']} + "
            f"0.3 x criticality {d['criticality']}, / {d['scale']:g}"
        )
    lines = [f"threshold: total NCP <= {s.threshold:.4f} ({how})"]
    lines.append(f"{'k':>6}{'NCP':>9}{'':>7}{'classes':>9}{'risk max':>10}{'risk mean':>11}{'seconds':>9}")
    for st in s.curve:
        mark = "under" if st.under else "over"
        if st.ncp is None:
            lines.append(f"{st.k:>6}{'-':>9}{'failed':>7}  {st.failed}")
            continue
        lines.append(
            f"{st.k:>6}{st.ncp:>9.4f}{mark:>7}{st.classes:>9,}{100 * st.risk_highest:>9.2f}%"
            f"{100 * st.risk_mean:>10.2f}%{st.seconds:>9.2f}"
        )
    chosen = s.step(s.k)
    if s.at_limit:
        lines.append(
            f"suggested k = {s.k} (NCP {chosen.ncp:.4f}): the limit, {s.limit} (--k-max or half the "
            "rows), is still under the threshold; raise --k-max to look further"
        )
    else:
        assert s.next_k is not None
        lines.append(
            f"suggested k = {s.k} (NCP {chosen.ncp:.4f}); k = {s.next_k} is over " + _over(s.step(s.next_k))
        )
    lines.append(
        f"{len(s.steps)} k tried in {s.seconds.get('total', 0):.1f} s (prepared once in "
        f"{s.seconds.get('prepare', 0):.1f} s)"
    )
    lines.append(
        f"release written: {s.applied}" if s.applied else "nothing written (add --apply to write it)"
    )
    return "\n".join(lines)
