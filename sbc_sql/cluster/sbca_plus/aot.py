"""Compile the default path's kernels ahead of time, into ``sbc_sql.cluster.sbca_plus._aot``.

``pip install`` runs :func:`build` (see setup.py). A run of the default SBCA then calls
native code straight from that extension module: no numba import, no numba cache to load.
On Adult (30,162 rows) that is about 0.45 s of a 1.3 s ``sbc-sql anonymize`` process.

The module holds the three kernels the Python side calls (:mod:`.compiled`), each for the
argument types :mod:`.sbcx` and :mod:`.blocks` pass, compiled by numba's ahead-of-time
compiler from the same source the JIT compiles, for the building machine's CPU, with the
GIL released as ``nogil`` does, so block mode's threads still run side by side. It also
holds the fingerprint of that source; :mod:`.compiled` ignores the module when the source
has changed since (an edited checkout), and falls back to the JIT.

This file is loaded by path at build time, before the package's dependencies exist: it
imports only the standard library, numpy and numba.
"""

from __future__ import annotations

import contextlib
import hashlib
import importlib.util
import sys
import tempfile
import warnings
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType

HERE = Path(__file__).resolve().parent
MODULE = "_aot"
#: the file whose functions the module compiles; its bytes make the fingerprint
SOURCE = "kernels.py"

# numba type strings; arrays are C-contiguous, as sbcx and blocks make them
_GREEDY = (
    "i8(f8[:,::1], f8[:,::1], f8[::1], f8[::1], b1[::1], {cat}[:,::1], i8[::1], f8[::1], "
    "b1[::1], i8[::1], i8[::1], i8[::1], i8[::1], i8[::1], i8[::1], b1[::1], f8[::1], "
    "i8[::1], i8[::1], i8, b1, i8, i8, i8, i8)"
)
#: exported name (kernel_codetype) -> (kernel, signature); greedy_pass once per code width
#: sbcx chooses, finish and hilbert_keys for the int32 codes sbcx and blocks give them
EXPORTS = {
    **{f"greedy_pass_{cat}": ("greedy_pass", _GREEDY.format(cat=cat)) for cat in ("u1", "u2", "i4")},
    "finish_i4": (
        "finish",
        "void(f8[:,::1], f8[::1], f8[::1], b1[::1], i4[:,::1], i8[::1], "
        "f8[::1], b1[::1], i8[::1], i8[::1], i8[::1], i8, b1, i8, i8, i8[::1])",
    ),
    "hilbert_keys_i4": (
        "hilbert_keys",
        "void(f8[:,::1], f8[::1], f8[::1], i4[:,::1], i8[::1], "
        "i8[::1], i8[::1], i8, u8[::1], i8, i8, u8[::1])",
    ),
}


def fingerprint(folder: Path = HERE) -> int:
    """A 60-bit hash of the kernels' source (the module's, when it was built)."""
    return int(hashlib.sha256((folder / SOURCE).read_bytes()).hexdigest()[:15], 16)


@contextlib.contextmanager
def _kernels(folder: Path) -> Iterator[ModuleType]:
    """A private copy of the kernel module, its numba cache in a scratch folder: what the
    build compiles must not land in the JIT's cache (under this module's name)."""
    from numba.core import config

    spec = importlib.util.spec_from_file_location("_sbc_sql_aot_kernels", folder / SOURCE)
    module = importlib.util.module_from_spec(spec)
    saved = config.CACHE_DIR
    with tempfile.TemporaryDirectory() as scratch:
        config.CACHE_DIR = scratch
        sys.modules[spec.name] = module  # numba resolves a kernel's globals through its module
        try:
            spec.loader.exec_module(module)
            yield module
        finally:
            config.CACHE_DIR = saved
            del sys.modules[spec.name]


@contextlib.contextmanager
def _releasing_gil() -> Iterator[None]:
    """numba's AOT compiler has no ``nogil`` option; its flags get the JIT's ``nogil``."""
    import numba.pycc.compiler as pycc_compiler
    from numba.core.compiler import Flags

    class NogilFlags(Flags):
        def __init__(self, *args, **kwargs) -> None:
            super().__init__(*args, **kwargs)
            self.release_gil = True

    saved = pycc_compiler.Flags
    pycc_compiler.Flags = NogilFlags
    try:
        yield
    finally:
        pycc_compiler.Flags = saved


def build(target: Path, folder: Path = HERE) -> Path:
    """Compile the module to ``target`` (a path ending in the extension suffix)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # numba.pycc says it is pending deprecation
        from numba.pycc import CC

        cc = CC(MODULE)
        cc.output_dir = str(target.parent)
        cc.output_file = target.name
        cc.target_cpu = "host"
        target.parent.mkdir(parents=True, exist_ok=True)
        with _kernels(folder) as kernels, _releasing_gil():
            for name, (kernel, signature) in EXPORTS.items():
                cc.export(name, signature)(getattr(kernels, kernel).py_func)
            cc.export("fingerprint", "i8()")(_constant(fingerprint(folder)))
            cc.compile()
    return target


def _constant(value: int):
    def constant():
        return value

    return constant


if __name__ == "__main__":  # python sbc_sql/cluster/sbca_plus/aot.py OUT.so: build by hand
    print(build(Path(sys.argv[1]).resolve()))
