"""The classification figures of a release against a label it keeps verbatim (their
definitions: the docstring of :mod:`sbc_sql.quality.evaluate`): which column the target is,
CM and class purity from one aggregate, and the model utility's fields
(:mod:`sbc_sql.quality.model`).
"""

from __future__ import annotations

from typing import Any

from sqlglot import exp

from ..engines.base import Engine
from ..errors import InputError
from ..model import Column
from ..sql.templates import render
from ..stages.measure import Layout
from . import model as ml


def target_column(layout: Layout, target: str | None, original: str) -> Column | None:
    """The target column: one released verbatim (a generalized QI has no label per row)."""
    if target is None:
        return None
    for c in layout.verbatim:
        if c.name == target:
            return c
    kept = ", ".join(c.name for c in layout.verbatim)
    if any(c.name == target for c in layout.qis):
        fix = f"pass one released verbatim ({kept})" if kept else "release the label verbatim"
        raise InputError(
            f"--target '{target}' is a generalized QI of the release (a range or set per class, no "
            f"label per row); {fix}, or anonymize with --keep {target} (or --sensitive {target})"
        )
    if not kept:
        raise InputError(
            f"--target '{target}' is not a column of both '{original}' and the release, which "
            "releases no column verbatim; anonymize with the label kept (--keep COLUMN)"
        )
    raise InputError(
        f"--target '{target}' is not a column of both '{original}' and the release; pass one of: {kept}"
    )


def check_model(target: str | None, model: bool, classifier: str, recorded_allowed: bool = False) -> None:
    """--model's needs, before anything runs: a target (``recorded_allowed``: not yet, the
    release's provenance may name one), a known classifier, scikit-learn."""
    if not model:
        return
    if target is None and not recorded_allowed:
        raise InputError("--model trains a classifier of a label: name the label with --target COLUMN")
    ml.check_classifier(classifier)
    ml.require()


def classification_sql(original: str, release: str, target: Column) -> exp.Expression:
    return render("eval_classification", original=original, release=release, label=target.name)


def classification(engine: Engine, original: str, release: str, target: Column) -> dict[str, Any]:
    """CM, the released rows off their class's majority, class purity (mean over classes)
    and row-weighted purity, from one aggregate."""
    n, released, classes, majority, purity = engine.fetch_one(classification_sql(original, release, target))
    n, released, classes, majority = int(n), int(released), int(classes), int(majority)
    return {
        "cm": (n - majority) / n if n else 0.0,
        "misclassified": released - majority,
        "class_purity": float(purity) / classes if classes else None,
        "row_purity": majority / released if released else None,
    }


def model_fields(utility: ml.ModelUtility) -> dict[str, Any]:
    """The model utility as the ``model_*`` fields of an evaluation."""
    return {
        "model_classifier": utility.classifier,
        "model_seed": utility.seed,
        "model_train_original": utility.train_original,
        "model_train_release": utility.train_release,
        "model_test": utility.test,
        "model_accuracy_original": utility.accuracy_original,
        "model_accuracy_release": utility.accuracy_release,
        "model_accuracy_ratio": utility.accuracy_ratio,
        "model_f1_average": utility.average,
        "model_f1_original": utility.f1_original,
        "model_f1_release": utility.f1_release,
        "model_f1_ratio": utility.f1_ratio,
    }
