"""The entry kernels' arguments: the one statement of what the Python side passes them.

For each kernel the Python side calls (:mod:`.kernels.greedy`'s ``greedy_pass``,
:mod:`.kernels.refine`'s ``finish``, :mod:`.kernels.order`'s ``hilbert_keys``), its
arguments in order, each with its name (the kernel's parameter) and numba type; ``{codes}``
stands for the type of the category codes, which the caller chooses. From this table come
the call (:func:`call_args`, from a mapping of named values), the signatures and export
names compiled ahead of time (:mod:`.aot`) and the argument whose dtype picks the export
(:mod:`.compiled`). Arrays are C-contiguous, as the callers make them.

Loaded by path at build time, before the package's dependencies exist (see :mod:`.aot`):
it imports only the standard library.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import NamedTuple

#: stands for the categorical code type in an argument's type
CODES = "{codes}"


class Kernel(NamedTuple):
    """An entry kernel: its module in the kernel folder, return type, arguments as (name,
    numba type) in order, and the code types it is compiled for ahead of time."""

    module: str
    returns: str
    args: tuple[tuple[str, str], ...]
    code_types: tuple[str, ...]

    def names(self) -> tuple[str, ...]:
        return tuple(name for name, _ in self.args)

    def signature(self, codes: str) -> str:
        """The numba signature with ``codes`` (e.g. "u1") as the code type."""
        types = ", ".join(t.format(codes=codes) for _, t in self.args)
        return f"{self.returns}({types})"

    def codes_index(self) -> int:
        """Position of the (only) argument typed by the code type."""
        (index,) = [i for i, (_, t) in enumerate(self.args) if CODES in t]
        return index


KERNELS = {
    "greedy_pass": Kernel(
        "greedy",
        "i8",
        (
            ("raw", "f8[:,::1]"),
            ("sc", "f8[:,::1]"),
            ("span", "f8[::1]"),
            ("wn", "f8[::1]"),
            ("num_act", "b1[::1]"),
            ("cat", CODES + "[:,::1]"),
            ("card", "i8[::1]"),
            ("wc", "f8[::1]"),
            ("cat_act", "b1[::1]"),
            ("pred", "i8[::1]"),
            ("cnt", "i8[::1]"),
            ("cnt_off", "i8[::1]"),
            ("pair", "i8[::1]"),
            ("pair_off", "i8[::1]"),
            ("rid", "i8[::1]"),
            ("alive", "b1[::1]"),
            ("dist", "f8[::1]"),
            ("state", "i8[::1]"),
            ("labels", "i8[::1]"),
            ("k", "i8"),
            ("growth", "b1"),
            ("seed_rule", "i8"),
            ("pool", "i8"),
            ("wide", "i8"),
            ("budget", "i8"),
            ("stop", "b1[::1]"),
            ("scode", "i4[:,::1]"),
            ("soff", "i8[::1]"),
            ("sp", "f8[::1]"),
            ("sord", "b1[::1]"),
            ("crit_i", "i8[::1]"),
            ("crit_f", "f8[::1]"),
            ("wlim", "f8[::1]"),
            ("vlim", "i8[::1]"),
            ("tgt", "i4[::1]"),
            ("n_lab", "i8"),
            ("tw", "f8"),
            ("wt", "i8[::1]"),
        ),
        # the narrowest codes the caller's cardinalities allow (see algorithm._kernel_arrays)
        ("u1", "u2", "i4"),
    ),
    "finish": Kernel(
        "refine",
        "void",
        (
            ("raw", "f8[:,::1]"),
            ("span", "f8[::1]"),
            ("wn", "f8[::1]"),
            ("num_act", "b1[::1]"),
            ("cat", CODES + "[:,::1]"),
            ("card", "i8[::1]"),
            ("wc", "f8[::1]"),
            ("cat_act", "b1[::1]"),
            ("qkind", "i8[::1]"),
            ("qidx", "i8[::1]"),
            ("lab", "i8[::1]"),
            ("k", "i8"),
            ("place", "b1"),
            ("window", "i8"),
            ("max_passes", "i8"),
            ("rounds", "i8"),
            ("stats", "i8[::1]"),
            ("stop", "b1[::1]"),
            ("scode", "i4[:,::1]"),
            ("soff", "i8[::1]"),
            ("sp", "f8[::1]"),
            ("sord", "b1[::1]"),
            ("crit_i", "i8[::1]"),
            ("crit_f", "f8[::1]"),
            ("wlim", "f8[::1]"),
            ("vlim", "i8[::1]"),
            ("tgt", "i4[::1]"),
            ("n_lab", "i8"),
            ("tw", "f8"),
            ("wt", "i8[::1]"),
        ),
        ("i4",),
    ),
    "hilbert_keys": Kernel(
        "order",
        "void",
        (
            ("nums", "f8[:,::1]"),
            ("lo", "f8[::1]"),
            ("span", "f8[::1]"),
            ("cats", CODES + "[:,::1]"),
            ("rank", "i8[::1]"),
            ("roff", "i8[::1]"),
            ("card", "i8[::1]"),
            ("bits", "i8"),
            ("spread", "u8[::1]"),
            ("start", "i8"),
            ("end", "i8"),
            ("keys", "u8[::1]"),
        ),
        ("i4",),
    ),
}


def exports() -> dict[str, tuple[str, str, str]]:
    """Exported name (``kernel_codetype``) -> (kernel module, kernel, signature)."""
    return {
        f"{name}_{codes}": (kernel.module, name, kernel.signature(codes))
        for name, kernel in KERNELS.items()
        for codes in kernel.code_types
    }


def call_args(kernel: str, values: Mapping[str, object]) -> tuple:
    """The positional arguments of ``kernel`` taken by name from ``values`` (extra names
    are ignored; a missing one raises KeyError)."""
    return tuple(values[name] for name in KERNELS[kernel].names())
