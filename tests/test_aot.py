"""The kernels compiled ahead of time (the wheel's sbc_sql.cluster.sbca_plus._aot) against numba's JIT:
the same classes, and the module is used only when it matches the source."""

from __future__ import annotations

import importlib.util
import inspect
import shutil
import zipfile
from pathlib import Path
from unittest import mock

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from strategies import criteria_tables
from strategies import data_from_arrays as make_data
from strategies import kernel_tables as qi_tables
from strategies import rules as criteria_rules
from test_kernel_blocks import synthetic

from sbc_sql.cluster import blocks
from sbc_sql.cluster.model import QIData
from sbc_sql.cluster.registry import block_algorithm
from sbc_sql.cluster.sbca_plus import algorithm as plus
from sbc_sql.cluster.sbca_plus import aot, compiled
from sbc_sql.cluster.sbca_plus.algorithm import sbca_plus
from sbc_sql.cluster.sbca_plus.args import KERNELS, call_args

# every test here loads the module the session's wheel carries: the wheel is built first
pytestmark = pytest.mark.slow

SETTINGS = settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large]
)


@pytest.fixture(scope="module")
def built(wheel, tmp_path_factory):
    """The module the wheel carries, loaded from its file."""
    archive = zipfile.ZipFile(wheel)
    (name,) = [n for n in archive.namelist() if n.startswith("sbc_sql/cluster/sbca_plus/_aot.")]
    path = Path(archive.extract(name, tmp_path_factory.mktemp("aot")))
    spec = importlib.util.spec_from_file_location("sbc_sql.cluster.sbca_plus._aot", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def kernels(module):
    """Route compiled's calls to ``module`` (None: the JIT)."""
    return mock.patch.object(compiled, "ahead_of_time", return_value=module)


def test_built_from_this_source(built) -> None:
    assert built.fingerprint() == aot.fingerprint()
    assert sorted(n for n in dir(built) if not n.startswith("__")) == sorted([*aot.exports(), "fingerprint"])


@pytest.mark.parametrize("kernel", sorted(KERNELS))
def test_the_table_names_the_kernels_parameters(kernel: str) -> None:
    """The argument table is the kernels' signature: same names, same order."""
    params = inspect.signature(compiled.jit_kernel(kernel).py_func).parameters
    assert tuple(params) == KERNELS[kernel].names()


def test_the_fingerprint_covers_the_kernel_folder_and_the_table(tmp_path: Path) -> None:
    """An edit to any kernel module, or to the argument table, changes the fingerprint."""
    shutil.copytree(Path(aot.__file__).parent / aot.KERNELS, tmp_path / aot.KERNELS)
    shutil.copy(Path(aot.__file__).parent / aot.ARGS, tmp_path / aot.ARGS)
    assert aot.fingerprint(tmp_path) == aot.fingerprint()
    for name in ["args.py", *(f"kernels/{p.name}" for p in (tmp_path / aot.KERNELS).glob("*.py"))]:
        path = tmp_path / name
        before = path.read_bytes()
        path.write_bytes(before + b"\n")
        assert aot.fingerprint(tmp_path) != aot.fingerprint(), name
        path.write_bytes(before)


@SETTINGS
@given(data=qi_tables(), k=st.integers(2, 8), growth=st.booleans(), seeds=st.sampled_from(plus.SEED_MODES))
def test_same_classes_as_the_jit(built, data: QIData, k: int, growth: bool, seeds: str) -> None:
    with kernels(None):
        expected = sbca_plus(data, k, growth=growth, seeds=seeds)
    with kernels(built):
        got = sbca_plus(data, k, growth=growth, seeds=seeds)
    np.testing.assert_array_equal(got, expected)


@SETTINGS
@given(table=criteria_tables(), rule=criteria_rules)
def test_same_classes_with_criteria_as_the_jit(built, table: tuple[QIData, int], rule) -> None:
    """The criteria's program runs the same dispatch in the module as in the JIT."""
    data, k = table
    with kernels(None):
        expected = sbca_plus(data, k, rule=rule)
    with kernels(built):
        got = sbca_plus(data, k, rule=rule)
    np.testing.assert_array_equal(got, expected)


@pytest.mark.parametrize("card", [40, 300])  # codes as uint8, then uint16
def test_same_blocks_as_the_jit(built, card: int) -> None:
    base = synthetic(6000, seed=card)
    rng = np.random.default_rng(card)
    cats = [
        (np.asarray(base.columns[q]), int(base.cardinality[q]))
        for q in range(base.n_qis)
        if not base.numeric[q]
    ]
    data = make_data(
        [np.asarray(base.columns[q], dtype=np.float64) for q in range(base.n_qis) if base.numeric[q]],
        cats + [(rng.integers(0, card, 6000), card)],
    )
    runs = []
    for module in (None, built):
        with kernels(module):
            runs.append(
                blocks.blocked(
                    data, 5, block_algorithm(5), block_size=1536, workers=2, categorical_by="coarse"
                )
            )
    np.testing.assert_array_equal(runs[1], runs[0])


def test_same_greedy_pass_with_int32_codes(built) -> None:
    """Above 65,536 values a column's codes are int32: that export too equals the JIT."""
    data = synthetic(800, seed=3)
    arr = plus._kernel_arrays(data, plus.Contingency(data), np.arange(data.n_rows))
    outs = []
    for kernel in (compiled.jit_kernel("greedy_pass"), built.greedy_pass_i4):
        n = data.n_rows
        values = {
            **arr,
            "raw": arr["raw"].copy(),
            "sc": arr["sc"].copy(),
            "cat": arr["cat"].astype(np.int32),
            "cnt": arr["cnt"].copy(),
            "pair": arr["pair"].copy(),
            "rid": np.arange(n, dtype=np.int64),
            "alive": np.ones(n, dtype=np.bool_),
            "dist": np.zeros(n),
            "state": np.array([n, n, 0, 0, n], dtype=np.int64),
            "labels": np.full(n, -2, dtype=np.int64),
            "wt": np.ones(n, dtype=np.int64),
            "k": 5,
            "growth": True,
            "seed_rule": 2,
            "pool": 64,
            "wide": 256,
            "budget": n,
            "stop": np.zeros(1, dtype=np.bool_),
            **plus._criteria_arrays(data, None, np.arange(n)),
            **plus._target_arrays(data, np.arange(n), 0.0),
        }
        done = kernel(*call_args("greedy_pass", values))
        outs.append((done, values["labels"], values["state"], values["cnt"], values["pair"]))
    for got, expected in zip(outs[1], outs[0], strict=True):
        np.testing.assert_array_equal(got, expected)


def test_a_stale_module_is_not_used(built) -> None:
    """Built from other source (an edited checkout): the JIT runs instead."""
    with (
        mock.patch.object(compiled.importlib, "import_module", return_value=built),
        mock.patch.object(compiled, "fingerprint", return_value=built.fingerprint() + 1),
    ):
        compiled.ahead_of_time.cache_clear()
        try:
            assert compiled.ahead_of_time() is None
            assert compiled.engine() == "jit"
        finally:
            compiled.ahead_of_time.cache_clear()


def test_the_environment_can_force_the_jit(built, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(compiled.importlib, "import_module", lambda name: built)
    compiled.ahead_of_time.cache_clear()
    try:
        assert compiled.engine() == "ahead-of-time"
        monkeypatch.setenv("SBC_SQL_KERNELS", "jit")
        compiled.ahead_of_time.cache_clear()
        assert compiled.engine() == "jit"
    finally:
        compiled.ahead_of_time.cache_clear()
