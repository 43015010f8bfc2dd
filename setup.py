"""Build steps: the package's layout, with the SQL folder at the repository's root (``sql/``)
shipped inside the package as ``sbc_sql.sql.text``, and the default SBCA's kernels compiled
ahead of time (sbc_sql/cluster/sbca_plus/aot.py).

Everything else about the package is in pyproject.toml. The kernels are optional: without
a C compiler (or with any other failure here) the package installs all the same and
numba compiles them on first use, as it does for the other algorithms.
"""

import importlib.util
import sys
from pathlib import Path

from setuptools import Distribution, find_packages, setup
from setuptools.command.build_ext import build_ext

AOT = Path(__file__).resolve().parent / "sbc_sql" / "cluster" / "sbca_plus" / "aot.py"


class BuildKernels(build_ext):
    def run(self) -> None:
        super().run()
        target = Path(self.get_ext_fullpath("sbc_sql.cluster.sbca_plus._aot"))
        try:
            spec = importlib.util.spec_from_file_location("_sbc_sql_aot", AOT)
            aot = importlib.util.module_from_spec(spec)
            spec.loader.exec_module(aot)
            aot.build(target, AOT.parent)
        except Exception as exc:  # any failure leaves the JIT in charge
            print(
                f"sbc-sql: kernels not compiled ahead of time ({type(exc).__name__}: {exc}); "
                "numba compiles them on first use",
                file=sys.stderr,
            )


class NativeDistribution(Distribution):
    """The wheel carries a compiled module, so it is tagged for this platform."""

    def has_ext_modules(self) -> bool:
        return True


#: the SQL text (query templates, the SQL functions' install script) lives in sql/ at the
#: root, beside the Python; the wheel carries it as this package (templates.sql_root())
SQL_PACKAGE = "sbc_sql.sql.text"

setup(
    packages=[*find_packages(include=["sbc_sql", "sbc_sql.*"]), SQL_PACKAGE],
    package_dir={SQL_PACKAGE: "sql"},
    cmdclass={"build_ext": BuildKernels},
    distclass=NativeDistribution,
)
