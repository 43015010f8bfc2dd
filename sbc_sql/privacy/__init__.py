"""Privacy models: what a release must satisfy (see :mod:`.base`), and the registered
criteria (:mod:`.registry`), which the command line reads at every start: the names below
are imported on first use, so that reading the registry loads none of the data stack."""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .base import PrivacyModel, check_all
    from .beta_likeness import BetaLikeness
    from .k_anonymity import KAnonymity
    from .l_diversity import LDiversity
    from .t_closeness import TCloseness

_HOMES = {
    "PrivacyModel": "base",
    "check_all": "base",
    "BetaLikeness": "beta_likeness",
    "KAnonymity": "k_anonymity",
    "LDiversity": "l_diversity",
    "TCloseness": "t_closeness",
}

__all__ = ["BetaLikeness", "KAnonymity", "LDiversity", "PrivacyModel", "TCloseness", "check_all"]


def __getattr__(name: str) -> Any:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(f"{__name__}.{home}"), name)
