"""The options of the background-knowledge algorithms (kept apart so that the registry
imports them without scipy or the algorithms)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

#: the estimators of background knowledge a run may ask for by name
ESTIMATORS = ("nb", "combo", "kernel")


@dataclass(frozen=True)
class UserKnowledge:
    """Background knowledge given by the user, already matched to the rows (see
    :func:`.knowledge.from_table`): ``matrix[i]`` is the distribution over the sensitive
    column's value codes of the row whose source position is ``position[i]``."""

    position: np.ndarray
    matrix: np.ndarray


@dataclass(frozen=True)
class BackgroundOptions:
    """How the background knowledge is estimated and bounded.

    ``threshold`` is J, the largest Jensen-Shannon divergence (bits, in (0, 1]) between
    two members of a class; the default 0.8 is the bound most published experiments with
    these algorithms fix (0.1 makes many small groups, 0.8 one or two on census-like
    data). ``estimator`` names how the knowledge is estimated from the input (naive Bayes,
    per-combination shrunk toward naive Bayes, or kernel regression) unless ``knowledge``
    gives it. ``seed`` drives beta_GE's random choices. ``rescue`` places a row the
    algorithm could not place into the nearest class of its group that stays beta-like, and
    ``rare_aware`` stops refining a k-row cluster that holds a value no k-row cluster can
    keep; both off reproduce the algorithms as first published (many more rows removed)."""

    threshold: float = 0.8
    estimator: str = "nb"
    knowledge: UserKnowledge | None = None
    seed: int = 0
    rescue: bool = True
    rare_aware: bool = True

    def __post_init__(self) -> None:
        if not 0.0 < self.threshold <= 1.0:
            raise ValueError(f"background threshold {self.threshold!r} is outside (0, 1]")
        if self.estimator not in ESTIMATORS:
            raise ValueError(f"background estimator {self.estimator!r} is not one of {', '.join(ESTIMATORS)}")

    @property
    def source(self) -> str:
        """Which knowledge the run uses, in words."""
        return "the user's table" if self.knowledge is not None else f"estimator {self.estimator}"


@dataclass(frozen=True)
class Knowledge:
    """The background knowledge a clustering bounded its classes by, for verification:
    ``belief[i]``, row i's row of ``beliefs`` (-1: a row not clustered), ``beliefs`` the
    distinct distributions over the sensitive column's value codes, ``threshold`` J. Every
    two members of a class must be within J (Jensen-Shannon divergence in bits)."""

    belief: np.ndarray
    beliefs: np.ndarray
    threshold: float

    def expanded(self, rows: np.ndarray, n: int) -> Knowledge:
        """The same knowledge for a table of n rows of which these are ``rows``."""
        belief = np.full(n, -1, dtype=np.int64)
        belief[rows] = self.belief
        return Knowledge(belief, self.beliefs, self.threshold)
