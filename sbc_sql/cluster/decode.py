"""The pull's rows, as Arrow batches, into the arrays every algorithm sees (:class:`QIData`).

Numerics become float64 (NULL: NaN); categoricals become int32 codes by Arrow's vectorized
lookup against the sorted domain the statistics read (NULL: the code after the domain's).
A :class:`Decoder` carries what decoding needs and pickles, so that rows decoded apart
(Spark's workers, block mode) compare as in one table: with privacy criteria, the sensitive
columns too, and with a target its labels, each as value codes against the whole table's
sorted values with their counts (:class:`Coded`), which the driver reads with SQL aggregates.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import numpy as np
import pyarrow as pa

from ..arrays import to_numpy
from ..errors import InputError
from ..model import Column
from .model import QIData
from .sensitive import Sensitive


@dataclass(frozen=True)
class Coded:
    """A column turned into value codes wherever its rows arrive: 0 .. m - 1 in the order
    of its non-NULL ``values`` (sorted), NULL last, as :class:`.sensitive.Sensitive` and
    ``QIData.target`` take them; ``counts`` holds each code's rows in the whole table (the
    NULLs' last, when it holds any). The driver reads both with one aggregate; they ship
    to the workers with the decoder, never the rows."""

    column: Column
    values: pa.Array
    counts: np.ndarray

    def codes(self, arr: pa.Array | pa.ChunkedArray) -> np.ndarray:
        """The value codes of ``arr`` (NULL: the code after the values')."""
        import pyarrow.compute as pc

        if isinstance(arr, pa.ChunkedArray):
            arr = arr.combine_chunks()
        if pa.types.is_dictionary(arr.type):
            arr = arr.cast(arr.type.value_type)
        idx = pc.index_in(arr, value_set=self.values)
        if idx.null_count != arr.null_count:
            raise InputError(
                f"column '{self.column.name}' ({self.column.type}) changed while it was read: "
                f"{idx.null_count - arr.null_count} value(s) are not among those its counts found"
            )
        return to_numpy(idx, np.int32, fill=len(self.values))


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
    #: the sensitive columns the criteria weigh, pulled after the QIs (none without criteria)
    sensitive: tuple[Coded, ...] = ()
    #: the target's labels (--target), pulled after the sensitive columns unless it is one
    target: Coded | None = None

    @property
    def extra(self) -> tuple[Coded, ...]:
        """The coded columns of the pull, after the QIs: the sensitive ones, then the
        target unless it is one of them."""
        names = {c.column.name for c in self.sensitive}
        tail = () if self.target is None or self.target.column.name in names else (self.target,)
        return (*self.sensitive, *tail)

    @property
    def extra_columns(self) -> tuple[Column, ...]:
        """The columns of :attr:`extra`, as the pull reads them after the QIs."""
        return tuple(c.column for c in self.extra)

    def qis_only(self, sensitive: bool = False) -> Decoder:
        """This decoder without the coded columns (rows of the QIs alone: the sample the
        blocks are cut from), or with the sensitive ones but not the target (``sensitive``:
        the sample the spread order is planned from, :func:`.distributed.spread_plan`)."""
        return dataclasses.replace(self, sensitive=self.sensitive if sensitive else (), target=None)

    def facts(self) -> Sensitive:
        """The sensitive columns' counts over the whole table, without rows (what a rule
        weighs counts against)."""
        return Sensitive(
            tuple(c.column.name for c in self.sensitive),
            tuple(np.zeros(0, dtype=np.int32) for _ in self.sensitive),
            tuple(c.counts for c in self.sensitive),
            tuple(c.column.kind == "numeric" for c in self.sensitive),
        )

    def codes(self, batch: pa.RecordBatch | pa.Table) -> tuple[np.ndarray, ...]:
        """The codes of each column of :attr:`extra` in a batch of the pull's rows."""
        at = 1 + len(self.qis)
        return tuple(c.codes(batch.column(at + j)) for j, c in enumerate(self.extra))

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
        columns = tuple(self.column(batch, i) for i in range(len(self.qis)))
        return self.data(columns, row_id, self.codes(batch))

    def data(
        self, columns: tuple[np.ndarray, ...], row_id: np.ndarray, codes: tuple[np.ndarray, ...] = ()
    ) -> QIData:
        """The rows as a QIData; ``codes``: those of :attr:`extra`, in its order (the
        sensitive columns' and the target's), or none."""
        sensitive = target = None
        if codes:
            n = len(self.sensitive)
            sensitive = (
                Sensitive(
                    tuple(c.column.name for c in self.sensitive),
                    tuple(codes[:n]),
                    tuple(c.counts for c in self.sensitive),
                    tuple(c.column.kind == "numeric" for c in self.sensitive),
                )
                if n
                else None
            )
            if self.target is not None:
                j = [c.column.name for c in self.extra].index(self.target.column.name)
                target = codes[j]
        return QIData(
            names=tuple(c.name for c in self.qis),
            numeric=tuple(c.kind == "numeric" for c in self.qis),
            columns=columns,
            lo=self.lo,
            hi=self.hi,
            cardinality=self.cardinality,
            weights=self.weights,
            position=row_id,
            sensitive=sensitive,
            target=target,
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
    import pyarrow.compute as pc

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
