"""Arrow <-> numpy for the pipeline's flat columns, through their buffers.

pyarrow's own conversions (``Array.to_numpy``, ``pa.array(ndarray)``, ``pa.table(dict)``)
import pandas on first use to check for pandas types, which costs a whole
``sbc-sql anonymize`` process about 0.25 s; the columns the pipeline moves are plain
numbers and masks, whose buffers numpy and Arrow can share as they are.

Arrow's compute functions (``pyarrow.compute``, whose import wraps each of its some 290
functions in Python: about 25 ms) are imported by the functions that compute, here and in
every module, never at a module's import.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa


def to_numpy(values: pa.Array | pa.ChunkedArray, dtype: type, fill: float | None = None) -> np.ndarray:
    """A numeric Arrow column as a numpy array of ``dtype`` (cast if needed), NULLs as
    ``fill`` (default NaN; an integer column with NULLs needs one)."""
    if isinstance(values, pa.ChunkedArray):
        parts = [to_numpy(chunk, dtype, fill) for chunk in values.chunks]
        return np.concatenate(parts) if parts else np.zeros(0, dtype=dtype)
    if fill is None:
        if values.null_count and np.dtype(dtype).kind != "f":
            raise ValueError("an integer column with NULLs needs a fill value")
        fill = np.nan
    want = pa.from_numpy_dtype(np.dtype(dtype))
    if values.type != want:
        import pyarrow.compute as pc

        values = pc.cast(values, want)
    width = np.dtype(dtype).itemsize
    out: np.ndarray = np.frombuffer(
        values.buffers()[1], dtype=dtype, count=len(values), offset=values.offset * width
    )
    if values.null_count:
        bits = np.unpackbits(np.frombuffer(values.buffers()[0], dtype=np.uint8), bitorder="little")
        out = out.copy()
        out[bits[values.offset : values.offset + len(values)] == 0] = fill
    return out


def from_numpy(values: np.ndarray) -> pa.Array:
    """A 1-D numeric numpy array as an Arrow array (no NULLs); the buffer is shared."""
    values = np.ascontiguousarray(values)
    return pa.Array.from_buffers(pa.from_numpy_dtype(values.dtype), len(values), [None, pa.py_buffer(values)])


def mask(values: np.ndarray) -> pa.Array:
    """A numpy boolean array as an Arrow boolean array (bit-packed)."""
    bits = np.packbits(np.asarray(values, dtype=np.bool_), bitorder="little")
    return pa.Array.from_buffers(pa.bool_(), len(values), [None, pa.py_buffer(bits)])


def table(columns: dict[str, np.ndarray]) -> pa.Table:
    return pa.Table.from_arrays([from_numpy(v) for v in columns.values()], names=list(columns))
