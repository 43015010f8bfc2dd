"""Arrow <-> numpy through buffers: the same values as pyarrow's own conversions."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pyarrow as pa
import pytest
from helpers import checkout_env, load_example
from hypothesis import given
from hypothesis import strategies as st

from sbc_sql import arrays


@given(
    st.lists(st.one_of(st.none(), st.floats(allow_nan=False, width=64)), max_size=40),
    st.integers(0, 5),
    st.integers(0, 5),
)
def test_floats_with_nulls_and_offsets(values, start, cut):
    arr = pa.array(values, pa.float64()).slice(start, max(len(values) - start - cut, 0))
    expected = np.array([np.nan if v is None else v for v in arr.to_pylist()], dtype=np.float64)
    got = arrays.to_numpy(arr, np.float64)
    np.testing.assert_array_equal(got, expected)


@given(st.lists(st.one_of(st.none(), st.integers(-(2**31), 2**31 - 1)), max_size=40), st.integers(0, 5))
def test_integers_cast_and_filled(values, start):
    arr = pa.array(values, pa.int32()).slice(start)
    got = arrays.to_numpy(pa.chunked_array([arr, arr]), np.int64, fill=-7)
    one = [-7 if v is None else v for v in arr.to_pylist()]
    assert got.dtype == np.int64 and got.tolist() == one + one


def test_integers_with_nulls_need_a_fill():
    with pytest.raises(ValueError, match="fill"):
        arrays.to_numpy(pa.array([1, None], pa.int64()), np.int64)


@given(st.lists(st.booleans(), max_size=70))
def test_masks_and_tables(bits):
    mask = arrays.mask(np.array(bits, dtype=np.bool_))
    assert mask.to_pylist() == bits
    table = arrays.table({"a": np.arange(len(bits), dtype=np.int64), "b": np.array(bits, dtype=np.float64)})
    assert table.column("a").to_pylist() == list(range(len(bits)))
    assert table.column("b").to_pylist() == [float(b) for b in bits]


@pytest.mark.slow
def test_a_run_does_not_import_pandas(tmp_path):
    # pyarrow's own conversions import pandas: 0.25 s of every command-line run
    path = load_example("examples/make_clinic_db.py").make_clinic_db(tmp_path / "c.duckdb", 200, 7)
    code = (
        "import sys, sbc_sql; "
        "sbc_sql.anonymize(sys.argv[1], 'patients', 4, drop=['birth_date']); "
        "print('pandas' in sys.modules)"
    )
    done = subprocess.run(
        [sys.executable, "-c", code, str(path)],
        capture_output=True,
        text=True,
        env=checkout_env(),
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "False"
