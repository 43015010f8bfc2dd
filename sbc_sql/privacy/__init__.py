"""Privacy models: what a release must satisfy (see :mod:`.base`)."""

from .base import PrivacyModel, check_all
from .beta_likeness import BetaLikeness
from .k_anonymity import KAnonymity
from .l_diversity import LDiversity
from .t_closeness import TCloseness

__all__ = ["BetaLikeness", "KAnonymity", "LDiversity", "PrivacyModel", "TCloseness", "check_all"]
