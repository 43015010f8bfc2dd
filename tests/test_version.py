"""The version is written once (sbc_sql.__version__) and read everywhere else."""

from __future__ import annotations

import importlib.metadata

from helpers import run_cli

import sbc_sql


def test_version_option_prints_the_package_version():
    res = run_cli(["--version"])
    assert res.exit_code == 0, res.stderr
    assert res.stdout.strip() == f"sbc-sql {sbc_sql.__version__}"


def test_metadata_version_is_the_package_version():
    assert importlib.metadata.version("sbc-sql") == sbc_sql.__version__
