"""The registered privacy criteria: the one list everything else reads.

:data:`BASE` is k-anonymity, which every release keeps (k is every command's argument);
:data:`CRITERIA` the criteria a user may ask on top of k, in the order their options are
declared, checked, described and verified. From this table come the criteria a run is asked
(:class:`.criteria.Criteria`, whose fields are the criteria's options), the privacy models a
release is verified against (:func:`.criteria.models`), the array rule a clustering keeps
(:class:`~sbc_sql.cluster.sensitive.Rule`) and the kernels' program: a new criterion is a
module defining its class (see :mod:`.criterion`) and its compiled twin
(``sbc_sql/cluster/sbca_plus/kernels/criterion_<name>.py``), and one line here.
"""

from __future__ import annotations

from .beta_likeness import BetaLikeness
from .criterion import Criterion
from .k_anonymity import KAnonymity
from .l_diversity import LDiversity
from .options import Option
from .recursive_diversity import RecursiveDiversity
from .t_closeness import TCloseness

BASE = KAnonymity
CRITERIA: tuple[type[Criterion], ...] = (
    LDiversity,
    TCloseness,
    BetaLikeness,
    RecursiveDiversity,
)


def registered() -> tuple[type[Criterion], ...]:
    """Every registered criterion: k-anonymity, then those asked on top of k."""
    return (BASE, *CRITERIA)


def options() -> tuple[Option, ...]:
    """Every option of the criteria on top of k, in the table's order."""
    return tuple(o for c in CRITERIA for o in c.options)
