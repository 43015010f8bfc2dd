"""The registered privacy criteria: the one list everything else reads.

Each entry names a criterion's class (``module:Class`` in this package, imported only when a
run needs it) and declares the options a user asks it with, as plain data: the command
line's flags, the Python API's keywords, the ``--config`` keys, the SQL functions' arguments
and the option reference in docs/options.md are made from these declarations (:mod:`sbc_sql.plan.catalogue`),
so the command line reads them at every start without loading the data stack.

:data:`BASE` is k-anonymity, which every release keeps (k is every command's argument);
:data:`CRITERIA` the criteria a user may ask on top of k, in the order their options are
declared, checked, described and verified. From this table come the criteria a run is asked
(:class:`.criteria.Criteria`, whose fields are the criteria's options), the privacy models a
release is verified against (:func:`.criteria.models`), the array rule a clustering keeps
(:class:`~sbc_sql.cluster.sensitive.Rule`) and the kernels' program: a new criterion is a
module defining its class (see :mod:`.criterion`), its compiled twin
(``sbc_sql/cluster/sbca_plus/kernels/criterion_<name>.py``) and its entry here.
"""

from __future__ import annotations

import functools
import importlib
from dataclasses import dataclass
from typing import TYPE_CHECKING

from .. import choices
from .options import Option

if TYPE_CHECKING:
    from .criterion import Criterion
    from .k_anonymity import KAnonymity


@dataclass(frozen=True)
class Figure:
    """A figure ``evaluate`` reports for a criterion on a sensitive column: the key of its
    measure (:meth:`.criterion.Criterion.measured`), its label, which way is better and
    what it means."""

    key: str
    label: str
    better: str | None
    meaning: str
    #: a whole number (a count of values) rather than a ratio
    whole: bool = False


@dataclass(frozen=True)
class Registered:
    """One registered criterion: where its class is, the options that ask it and the
    figures ``evaluate`` reports for it."""

    #: ``module:Class`` in sbc_sql.privacy
    where: str
    #: its options, in the order a caller passes them positionally
    options: tuple[Option, ...] = ()
    figures: tuple[Figure, ...] = ()

    def load(self) -> type[Criterion]:
        """The criterion's class (its module imported on first use)."""
        module, name = self.where.split(":")
        kind: type[Criterion] = getattr(importlib.import_module(f"{__package__}.{module}"), name)
        return kind


K_ANONYMITY = Registered("k_anonymity:KAnonymity")

L_DIVERSITY = Registered(
    "l_diversity:LDiversity",
    (
        Option(
            "l_diversity",
            int,
            None,
            help="l-diversity on every sensitive column: at least L distinct values per class "
            "(see --l-model), e.g. --l-diversity 3.",
            metavar="L",
            minimum=2,
            meaning="a class holds at least l sensitive values",
            example="3",
        ),
        Option(
            "l_model",
            str,
            "distinct",
            help="Which l-diversity: distinct values or entropy.",
            choices=choices.L_VARIANTS,
        ),
    ),
    (
        Figure(
            "l_diversity", "l-diversity", "higher", "fewest distinct sensitive values in a class", whole=True
        ),
    ),
)

T_CLOSENESS = Registered(
    "t_closeness:TCloseness",
    (
        Option(
            "t_closeness",
            float,
            None,
            help="t-closeness on every sensitive column: each class's distribution within EMD T "
            "of the whole table's, e.g. --t-closeness 0.2.",
            metavar="T",
            above=0.0,
            below=1.0,
            meaning="it bounds a distance between distributions",
            example="0.2",
        ),
    ),
    (
        Figure(
            "t_closeness",
            "t-closeness",
            "lower",
            "largest distance (EMD) between a class's sensitive distribution and the input's",
        ),
    ),
)

BETA_LIKENESS = Registered(
    "beta_likeness:BetaLikeness",
    (
        Option(
            "beta_likeness",
            float,
            None,
            help="Enhanced beta-likeness on every sensitive column: no value's share in a class "
            "above its table share by more than min(B, -ln p) relatively, e.g. --beta-likeness 1.",
            metavar="B",
            above=0.0,
            meaning="it bounds a relative gain",
            example="1",
        ),
        Option(
            "beta_basic",
            bool,
            False,
            help="The basic beta-likeness (B alone) instead of the enhanced one.",
        ),
    ),
    (
        Figure(
            "beta_likeness",
            "beta-likeness",
            "lower",
            "largest relative gain in the frequency of a sensitive value inside a class",
        ),
        Figure(
            "enhanced_beta_likeness",
            "enhanced beta-likeness",
            "lower",
            "beta-likeness with a frequent value's gain capped at -ln(its frequency)",
        ),
    ),
)

RECURSIVE_DIVERSITY = Registered(
    "recursive_diversity:RecursiveDiversity",
    (
        Option(
            "recursive_l",
            int,
            None,
            help="Recursive (c,l)-diversity on every sensitive column: in each class the most "
            "frequent value below C times the rows of the values ranked L and below, e.g. "
            "--recursive-l 3.",
            metavar="L",
            minimum=2,
            meaning="a class holds at least l sensitive values",
            example="3",
        ),
        Option(
            "recursive_c",
            float,
            2.0,
            help="The C of recursive (c,l)-diversity (with --recursive-l): how far the most frequent "
            "value may dominate.",
            metavar="C",
            above=0.0,
            meaning="it bounds how much the most frequent value may dominate",
            example="2",
        ),
    ),
    (
        Figure(
            "recursive_c",
            "recursive (c,2)-diversity c",
            "lower",
            "largest count of a class's most frequent sensitive value over the rest of its rows: "
            "the release keeps recursive (c,2)-diversity for every c above it",
        ),
    ),
)

BASE = K_ANONYMITY
CRITERIA: tuple[Registered, ...] = (L_DIVERSITY, T_CLOSENESS, BETA_LIKENESS, RECURSIVE_DIVERSITY)


def options() -> tuple[Option, ...]:
    """Every option of the criteria on top of k, in the table's order."""
    return tuple(o for c in CRITERIA for o in c.options)


def figures() -> tuple[Figure, ...]:
    """Every figure ``evaluate`` reports for the criteria on top of k, in the table's order."""
    return tuple(f for c in CRITERIA for f in c.figures)


@functools.cache
def criteria() -> tuple[type[Criterion], ...]:
    """The classes of the criteria on top of k, in the table's order."""
    return tuple(c.load() for c in CRITERIA)


def base() -> type[KAnonymity]:
    """k-anonymity's class."""
    kind: type[KAnonymity] = BASE.load()  # type: ignore[assignment]
    return kind


def registered() -> tuple[type[Criterion], ...]:
    """Every registered criterion's class: k-anonymity, then those asked on top of k."""
    return (base(), *criteria())
