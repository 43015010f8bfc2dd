"""The pull's rows, as Arrow batches, into the arrays every algorithm sees (:class:`QIData`).

Numerics become float64 (NULL: NaN); categoricals become int32 codes by Arrow's vectorized
lookup against the sorted domain the statistics read (NULL: the code after the domain's).
A :class:`Decoder` carries what decoding needs and pickles, so that rows decoded apart
(Spark's workers, block mode) compare as in one table.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ..arrays import to_numpy
from ..errors import InputError
from ..model import Column
from .model import QIData


@dataclass(frozen=True)
class Decoder:
    """What turns the pull's rows into a :class:`QIData` wherever they arrive (Spark's
    workers too: it pickles): the QIs, the domains their codes index, and the table's
    ranges, cardinalities and weights, so that rows decoded apart compare as in one table."""

    qis: tuple[Column, ...]
    domains: tuple[pa.Array | None, ...]
    lo: tuple[float, ...]
    hi: tuple[float, ...]
    cardinality: tuple[int, ...]
    weights: tuple[float, ...]

    def column(self, batch: pa.RecordBatch | pa.Table, i: int) -> np.ndarray:
        """QI i of a batch of the pull's rows (row id first): numbers as float64, NULL NaN;
        categories as int32 codes, NULL the code after the domain's."""
        arr = batch.column(1 + i)
        c = self.qis[i]
        if c.kind == "numeric":
            return to_numpy(arr, np.float64)
        domain = self.domains[i]
        assert domain is not None
        return encode_column(arr, domain, c)

    def frame(self, batch: pa.RecordBatch | pa.Table) -> QIData:
        """The rows of a batch of the pull's rows as a QIData, positioned by their row ids."""
        row_id = to_numpy(batch.column(0), np.int64)
        return self.data(tuple(self.column(batch, i) for i in range(len(self.qis))), row_id)

    def data(self, columns: tuple[np.ndarray, ...], row_id: np.ndarray) -> QIData:
        return QIData(
            names=tuple(c.name for c in self.qis),
            numeric=tuple(c.kind == "numeric" for c in self.qis),
            columns=columns,
            lo=self.lo,
            hi=self.hi,
            cardinality=self.cardinality,
            weights=self.weights,
            position=row_id,
        )


def encode_column(
    values: pa.ChunkedArray | pa.Array,
    domain: pa.Array,
    column: Column,
) -> np.ndarray:
    """:func:`encode` for a named QI, with an error that says what to do."""
    try:
        return encode(values, domain)
    except ValueError:
        # SQL grouped values that differ byte for byte: a collation such as NOCASE makes
        # 'a' and 'A' one group there, two values here
        raise InputError(
            f"categorical quasi-identifier '{column.name}' ({column.type}) holds "
            "values that are equal under its collation but differ; read it "
            'through a view that selects it with COLLATE "binary", or declare '
            "it with --keep or --drop"
        ) from None


def encode(values: pa.ChunkedArray | pa.Array, domain: pa.Array) -> np.ndarray:
    """Category codes of values against the sorted non-NULL domain; NULL -> len(domain).

    Vectorized in Arrow: no Python object per row. Dictionary (ENUM) input is mapped through
    its dictionary, so only the dictionary is looked up.
    """
    if isinstance(values, pa.ChunkedArray):
        parts = [encode(chunk, domain) for chunk in values.chunks]
        return np.concatenate(parts) if parts else np.zeros(0, dtype=np.int32)
    null_code = len(domain)
    if pa.types.is_dictionary(values.type):
        mapping = pc.index_in(values.dictionary, value_set=domain)
        idx = pc.take(mapping, values.indices)
    else:
        idx = pc.index_in(values, value_set=domain)
    missing = idx.null_count - values.null_count
    if missing:
        raise ValueError(f"{missing} value(s) are not in the column's domain")
    return to_numpy(idx, np.int32, fill=null_code)
