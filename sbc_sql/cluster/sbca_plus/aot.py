"""Compile the default path's kernels ahead of time, into ``sbc_sql.cluster.sbca_plus._aot``.

``pip install`` runs :func:`build` (see setup.py). A run of the default SBCA then calls
native code straight from that extension module: no numba import, no numba cache to load
(benchmarks/results/scale.md compares the two).

The module holds the three kernels the Python side calls (:mod:`.compiled`), each for the
argument types :mod:`.args` declares, compiled by numba's ahead-of-time
compiler from the same source the JIT compiles, for the building machine's CPU, with the
GIL released as ``nogil`` does, so block mode's threads still run side by side. It also
holds the fingerprint of that source (every file of the kernel folder, and the argument
table :mod:`.args`); :mod:`.compiled` ignores the module when the source has changed since
(an edited checkout), and falls back to the JIT.

This file is loaded by path at build time, before the package's dependencies exist: it
imports only the standard library, numpy and numba, and loads the argument table and the
kernel folder by path too.
"""

from __future__ import annotations

import contextlib
import hashlib
import importlib.util
import sys
import tempfile
import warnings
from collections.abc import Callable, Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

HERE = Path(__file__).resolve().parent
MODULE = "_aot"
#: the folder whose kernels the module compiles, loaded as a private package for the build
KERNELS = "kernels"
#: the entry kernels' argument table (stdlib only)
ARGS = "args.py"
_PRIVATE = "_sbc_sql_aot_kernels"


def _load(name: str, path: Path, folder: Path | None = None) -> ModuleType:
    """The module (a package when ``folder`` is given) at ``path``, registered under ``name``."""
    spec = importlib.util.spec_from_file_location(
        name, path, submodule_search_locations=None if folder is None else [str(folder)]
    )
    if spec is None or spec.loader is None:
        raise ImportError(f"no module to load at {path}")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # numba resolves a kernel's globals through its module
    spec.loader.exec_module(module)
    return module


def _args(folder: Path = HERE) -> ModuleType:
    """The argument table: the package's module at run time, loaded by path at build time."""
    if __package__ and folder == HERE:
        return importlib.import_module(f"{__package__}.args")
    name = "_sbc_sql_aot_args"
    try:
        return _load(name, folder / ARGS)
    finally:
        sys.modules.pop(name, None)


def exports(folder: Path = HERE) -> dict[str, tuple[str, str, str]]:
    """Exported name (kernel_codetype) -> (kernel module, kernel, numba signature)."""
    table: dict[str, tuple[str, str, str]] = _args(folder).exports()
    return table


def _sources(folder: Path) -> list[Path]:
    """The files whose bytes make the fingerprint: every kernel module and the argument table."""
    return sorted((folder / KERNELS).glob("*.py")) + [folder / ARGS]


def fingerprint(folder: Path = HERE) -> int:
    """A 60-bit hash of the kernels' source and argument table (the module's, when it was built)."""
    h = hashlib.sha256()
    for path in _sources(folder):
        h.update(path.relative_to(folder).as_posix().encode() + b"\0")
        h.update(path.read_bytes() + b"\0")
    return int(h.hexdigest()[:15], 16)


@contextlib.contextmanager
def _kernels(folder: Path) -> Iterator[ModuleType]:
    """A private copy of the kernel folder as a package, its numba cache in a scratch folder:
    what the build compiles must not land in the JIT's cache (under the package's names)."""
    from numba.core import config

    # numba.core.config sets its options at run time, so they are not in its type information
    saved = config.CACHE_DIR  # type: ignore[attr-defined]
    with tempfile.TemporaryDirectory() as scratch:
        config.CACHE_DIR = scratch  # type: ignore[attr-defined]
        try:
            yield _load(_PRIVATE, folder / KERNELS / "__init__.py", folder / KERNELS)
        finally:
            config.CACHE_DIR = saved  # type: ignore[attr-defined]
            for name in [m for m in sys.modules if m == _PRIVATE or m.startswith(_PRIVATE + ".")]:
                del sys.modules[name]


@contextlib.contextmanager
def _releasing_gil() -> Iterator[None]:
    """numba's AOT compiler has no ``nogil`` option; its flags get the JIT's ``nogil``."""
    import numba.pycc.compiler as pycc_compiler
    from numba.core.compiler import Flags

    class NogilFlags(Flags):
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            super().__init__(*args, **kwargs)
            # numba's flags are descriptors typed as the option, set as its value
            self.release_gil = True  # type: ignore[assignment]

    # replacing the class that numba.pycc's compiler instantiates: mypy takes it as a type
    saved = pycc_compiler.Flags
    pycc_compiler.Flags = NogilFlags  # type: ignore[misc]
    try:
        yield
    finally:
        pycc_compiler.Flags = saved  # type: ignore[misc]


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
            for name, (module, kernel, signature) in exports(folder).items():
                source = importlib.import_module(f"{kernels.__name__}.{module}")
                cc.export(name, signature)(getattr(source, kernel).py_func)
            cc.export("fingerprint", "i8()")(_constant(fingerprint(folder)))
            cc.compile()
    return target


def _constant(value: int) -> Callable[[], int]:
    def constant() -> int:
        return value

    return constant


if __name__ == "__main__":  # python sbc_sql/cluster/sbca_plus/aot.py OUT.so: build by hand
    print(build(Path(sys.argv[1]).resolve()))
