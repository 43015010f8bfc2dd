"""The provenance of a run's release: how it was made (see :mod:`sbc_sql.provenance`), from
what the steps handed on, and the rows it suppressed per reason."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from ..cluster.registry import ClusterRun
from ..cluster.sensitive import REASONS
from ..privacy.base import PrivacyModel
from ..provenance import document as provenance_document
from ..stages import measure, verify
from ..version import __version__
from .cluster import Clustering
from .prepare import Prepared

# counts the provenance takes from verification, not from the measures
_COUNTS = ("rows", "released", "suppressed", "classes")


def suppressed_by(run: ClusterRun | None) -> dict[str, int]:
    """Suppressed rows per reason, from the algorithm's reasons."""
    if run is not None and run.table is not None:
        return dict(run.suppressed)
    if run is None or run.reasons is None:
        return {}
    codes, counts = np.unique(run.reasons[run.labels < 0], return_counts=True)
    return {REASONS[int(c)]: int(n) for c, n in zip(codes, counts, strict=True)}


def document(
    prepared: Prepared,
    clustering: Clustering,
    verdict: verify.Verdict | None,
    measures: measure.Measures | None,
    models: Sequence[PrivacyModel] = (),
    achieved: Mapping[str, float] | None = None,
) -> dict[str, Any]:
    """How this release was made; a dry run has no counts or measures yet, and records
    none."""
    plan, run = clustering.plan, clustering.run
    recorded = [
        {
            "name": m.name,
            **m.params(),
            **({"column": m.sensitive.name} if m.sensitive else {}),
            # which form of the model: l-diversity's variant, beta-likeness's enhanced flag
            # and k-map's or delta-presence's population
            **{a: getattr(m, a) for a in ("variant", "enhanced", "population") if hasattr(m, a)},
        }
        for m in (models or verify.default_models(plan.k))
    ]
    return provenance_document(
        plan,
        version=__version__,
        algorithm=run.algorithm if run else plan.options.algorithm,
        mode=run.mode if run else plan.options.mode,
        models=recorded,
        facts=verdict.facts if verdict else {},
        measures={k: v for k, v in measures.as_dict().items() if k not in _COUNTS} if measures else None,
        timings=prepared.timings,
        hierarchies=list(prepared.hierarchies or ()),
        achieved=achieved,
        suppressed_by=suppressed_by(run),
        views=prepared.engine.capabilities.release_views,
    )
