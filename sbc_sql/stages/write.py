"""Generalize stage: the SQL that turns class ids into the release (each class generalized once).

Each class is recoded locally by ``GROUP BY eq_class``: numeric QIs to [min, max] of
their own type plus a has-NULL flag, categorical QIs to the sorted list of distinct values.
The release is two tables and two views: ``<output>_classes`` (one row per class: id, size,
generalization), ``<output>_rows`` (one row per released row: class id and the columns
released verbatim), the view ``<output>`` joining them (a row per released row, as analysts
query it) and the text view ``<output>_view``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

import numpy as np
import pyarrow as pa
from sqlglot import exp

from ..arrays import from_numpy
from ..cluster.model import QIData
from ..model import Column
from ..plan import CLASS_SIZE, Plan
from ..sql.nodes import alias, ref, value_set
from ..sql.templates import SlotValue, ident, render


def classes_projection(
    plan: Plan, list_type: Callable[[str], exp.DataType] | None = None
) -> list[exp.Expression]:
    """Class table columns: eq_class, class_size, then each QI's generalization in source
    order; with ``list_type`` (the engine's :meth:`~sbc_sql.engines.base.Engine.list_type`),
    each categorical QI's set is the uploaded v's, as a list of its type."""
    out: list[exp.Expression] = [
        alias(ref("sbc_eq_class", "g"), "eq_class"),
        alias(ref("sbc_size", "g"), CLASS_SIZE),
    ]
    for c in plan.qis:
        if list_type is not None and c.kind == "categorical":
            out.append(alias(exp.cast(ref(c.name, "v"), list_type(c.type)), c.name))
        else:
            out += [alias(ref(name, "g"), name) for name in c.release_columns]
    return out


def release_projection(columns: Sequence[Column]) -> list[exp.Expression]:
    """The view's columns after eq_class: the source's columns in order, identifiers dropped."""
    return [
        alias(ref(name, "c" if c.role == "qi" else "r"), name)
        for c in columns
        if c.role != "identifier"
        for name in c.release_columns
    ]


#: the column of the distinct tuples' table (stages.pull) that counts each tuple's rows
TUPLE_COUNT = "sbc_count"


#: categorical QI types whose values come back from an uploaded Arrow list as the engine
#: stored them (text, booleans, integers): their value sets may be made in this process
_PLAIN_SET_TYPES = frozenset(
    {"VARCHAR", "TEXT", "STRING", "BOOLEAN", "TINYINT", "SMALLINT", "INTEGER", "BIGINT"}
    | {"UTINYINT", "USMALLINT", "UINTEGER", "UBIGINT"}
)


def sets_beside(plan: Plan, uploads_sets: bool) -> bool:
    """Whether this release's value sets are made in this process (:func:`value_sets`) and
    uploaded, rather than aggregated by the class table's statement: on an engine that takes
    an upload without copying it (``Capabilities.value_sets``), when every categorical QI is
    of a type that an upload returns unchanged. A plan decision, so a dry run shows the
    statements of a real run."""
    cats = plan.categorical_qis
    if plan.options.recode != "generalize":
        return False  # a microaggregated release's class table aggregates every QI in SQL
    return uploads_sets and bool(cats) and all(c.type.upper() in _PLAIN_SET_TYPES for c in cats)


def value_sets(data: QIData, labels: np.ndarray, domains: Mapping[str, pa.Array], plan: Plan) -> pa.Table:
    """One row per class of ``labels`` (the class of each row of ``data``; below 0:
    suppressed): its id, then each categorical QI's value set, the sorted distinct values of
    its rows with NULL as one trailing element, as create_classes's aggregate makes it.

    A row's value code is its value's position in the QI's domain, which the statistics read
    in the engine's own order (NULL the last code), so sorting (class, code) pairs sorts each
    set as the engine would. The rows are put in class order once (a stable sort); each QI's
    pairs are then runs of a few rows to sort and deduplicate: 1,000,000 rows and five sets
    in about 0.15 s. The pairs are int32 while they fit, and one QI's scratch is let go
    before the next's: this runs beside the pulled arrays, at the run's peak of memory. The
    sets hold their values as codes into the domain (dictionary-encoded), which the class
    table's statement casts to a list of the column's type."""
    kept = labels >= 0
    keep = None if kept.all() else kept
    order = np.argsort(labels if keep is None else labels[keep], kind="stable")
    lab = labels[order] if keep is None else labels[keep][order]
    n = len(lab)
    starts = np.flatnonzero(np.r_[True, lab[1:] != lab[:-1]]) if n else np.zeros(0, np.int64)
    ids = lab[starts].astype(np.int64)
    del lab
    n_classes = len(starts)
    # each row's class as 0 .. n_classes - 1, in class order
    member = np.repeat(
        np.arange(n_classes, dtype=np.int32 if n_classes < 2**31 else np.int64),
        np.diff(np.r_[starts, n]),
    )
    columns: dict[str, pa.Array] = {"eq_class": from_numpy(ids)}
    index = {name: q for q, name in enumerate(data.names)}
    for column in plan.categorical_qis:
        domain = domains[column.name]
        width = len(domain) + 1  # the NULL code is len(domain)
        codes = np.asarray(data.columns[index[column.name]])
        codes = codes[order] if keep is None else codes[keep][order]
        pairs: np.ndarray = member.astype(np.int32 if n_classes * width < 2**31 else np.int64)
        np.multiply(pairs, width, out=pairs)
        np.add(pairs, codes.astype(pairs.dtype, copy=False), out=pairs)
        del codes
        pairs.sort(kind="stable")
        if n:
            distinct = np.empty(n, dtype=np.bool_)
            distinct[0] = True
            np.not_equal(pairs[1:], pairs[:-1], out=distinct[1:])
            pairs = pairs[distinct]
            del distinct
        offsets = np.zeros(n_classes + 1, dtype=np.int64)
        np.cumsum(np.bincount(pairs // width, minlength=n_classes), out=offsets[1:])
        np.remainder(pairs, width, out=pairs)
        # the values as codes into the domain (NULL the invalid code): a list of 9,000,000
        # values at 10M rows is 36 MB of codes, where the strings taken would be 100 MB
        codes = pairs.astype(np.int32, copy=False)
        del pairs
        valid = np.packbits(codes != width - 1, bitorder="little")
        indices = pa.Array.from_buffers(
            pa.int32(), len(codes), [pa.py_buffer(valid), pa.py_buffer(codes)], null_count=-1
        )
        values = pa.DictionaryArray.from_arrays(indices, domain)
        columns[column.name] = pa.LargeListArray.from_arrays(from_numpy(offsets), values)
    return pa.Table.from_arrays(list(columns.values()), names=list(columns))


def labelled_columns(qis: Sequence[Column], verbatim: Sequence[Column], tuples: bool) -> list[str]:
    """The source columns a run's labelled source keeps (:func:`labelled_sql`): the QIs and
    the columns released verbatim; the verbatim ones only for a run that clustered tuples
    (its classes are built, and its values checked, from the tuples)."""
    return [c.name for c in ([] if tuples else list(qis)) + list(verbatim)]


def labelled_sql(
    source: str, labels: str, labelled: str, row_id: exp.Expression, columns: Sequence[str]
) -> exp.Expression:
    """The run's labelled source, made once: ``source`` fully joined to ``labels`` under the
    temporary name ``labelled``, with the ``columns`` asked (see sql/templates/labelled.sql).
    The class and row tables are built from it, and verification reads it."""
    return render(
        "labelled", labelled=labelled, source=source, row_id=row_id, labels=labels, col=list(columns)
    )


def labelled_rows_sql(labelled: str, columns: Sequence[str]) -> exp.Query:
    """The released rows (class >= 0) of a labelled source made by :func:`labelled_sql`."""
    return _as_query(render("labelled_rows", labelled=labelled, col=list(columns)))


def labelled_join_sql(source: str, labels: str, row_id: exp.Expression, columns: Sequence[str]) -> exp.Query:
    """The released rows (class >= 0) of ``source`` joined to its ``labels``: what
    :func:`labelled_rows_sql` reads, joined where it is needed (a statement run alone, or
    the distinct tuples and their labels)."""
    return _as_query(render("labelled_join", source=source, row_id=row_id, labels=labels, col=list(columns)))


def released_rows(
    source: str, labels: str, row_id: exp.Expression, columns: Sequence[str], labelled: str | None
) -> exp.Query:
    """The released rows of ``source`` with their classes: read from the labelled source
    ``labelled`` when the run made one, else joined."""
    if labelled is not None:
        return labelled_rows_sql(labelled, columns)
    return labelled_join_sql(source, labels, row_id, columns)


def _as_query(tree: exp.Expression) -> exp.Query:
    if not isinstance(tree, exp.Query):
        raise TypeError("expected a query")
    return tree


def create_classes_sql(
    plan: Plan,
    table: str,
    labels: str,
    row_id: exp.Expression,
    tuples: str | None = None,
    sets: str | None = None,
    list_type: Callable[[str], exp.DataType] | None = None,
    labelled: str | None = None,
) -> exp.Expression:
    """The class table from the source's rows and their labels, or, with ``tuples``, from
    the distinct tuples' table and the tuples' labels (``labels`` and ``row_id`` then
    those of the tuples): a class's size is then the sum of its tuples' row counts. With
    ``sets``, the value sets are those uploaded under that name (:func:`value_sets`), each
    cast to its column's list type as the engine names it (``list_type``). With
    ``labelled`` (and no ``tuples``), the rows are read from the run's labelled source
    (:func:`labelled_sql`) rather than joined."""
    size: exp.Expression = exp.Count(this=exp.Star())
    qis = [c.name for c in plan.qis]
    if tuples is not None:
        size = exp.cast(exp.Sum(this=ref(TUPLE_COUNT, "s")), exp.DataType.Type.BIGINT)
        rows = labelled_join_sql(tuples, labels, row_id, [*qis, TUPLE_COUNT])
    else:
        rows = released_rows(plan.source.name, labels, row_id, qis, labelled)
    slots: dict[str, SlotValue] = {
        "classes": table,
        "labelled": rows,
        "size": size,
        "num": [c.name for c in plan.numeric_qis],
    }
    if sets is not None:
        if list_type is None:
            raise ValueError("uploaded value sets need the engine's list_type")
        projection = classes_projection(plan, list_type)
        return render("create_classes_sets", **slots, sets=sets, projection=projection)
    return render(
        "create_classes",
        **slots,
        cat=[c.name for c in plan.categorical_qis],
        sets=[value_set(ref(c.name, "s"), len(plan.categorical_qis)) for c in plan.categorical_qis],
        projection=classes_projection(plan),
    )


#: the engine's type of a column as the catalog names it (Engine.column_type)
ColumnType = Callable[[str], exp.DataType]

#: the day every date's mean is counted from
_EPOCH = exp.cast(exp.Literal.string("1970-01-01"), "DATE")


def aggregate_sql(c: Column, value: exp.Expression, column_type: ColumnType) -> exp.Expression:
    """A microaggregated QI's value of a class, an aggregate over its rows' ``value``s
    (NULLs left out): the mean rounded to the column's type (to a whole number for an
    integer column, to a day for a date, by a cast for the others), the lower median (a
    value of the class: QUANTILE_DISC), or NULL of the column's type for a mode, which
    :func:`mode_updates_sql` sets."""
    typed = column_type(c.type)
    if c.aggregate == "median":
        return exp.PercentileDisc(this=value, expression=exp.Literal.number(0.5))
    if c.aggregate == "mean":
        if c.temporal == "date":
            days = exp.DateDiff(this=value, expression=_EPOCH.copy(), unit=exp.var("DAY"))
            mean = exp.cast(exp.Round(this=exp.Avg(this=days)), "INTEGER")
            return exp.cast(exp.Add(this=_EPOCH.copy(), expression=mean), typed)
        if typed.is_type(*exp.DataType.INTEGER_TYPES):
            return exp.cast(exp.Round(this=exp.Avg(this=value)), typed)
        return exp.cast(exp.Avg(this=value), typed)
    if c.aggregate == "mode":
        return exp.cast(exp.Null(), typed)
    raise ValueError(f"no single-value aggregate {c.aggregate!r}")


def microaggregated(plan: Plan) -> bool:
    """Whether the plan's release is microaggregated (``--recode microaggregate``)."""
    return plan.options.recode == "microaggregate"


def create_classes_micro_sql(
    plan: Plan,
    table: str,
    labels: str,
    row_id: exp.Expression,
    column_type: ColumnType,
    labelled: str | None = None,
) -> list[exp.Expression]:
    """The statements that make a microaggregated release's class table: its GROUP BY
    (create_classes_micro.sql: sizes, means, medians, value sets), then one UPDATE per QI
    released as its class's mode (update_class_mode.sql over class_mode.sql)."""
    qis = [c.name for c in plan.qis]
    rows = released_rows(plan.source.name, labels, row_id, qis, labelled)
    one = [c for c in plan.qis if c.one_value]
    sets = [c for c in plan.qis if not c.one_value]
    create = render(
        "create_classes_micro",
        classes=table,
        labelled=rows.copy(),
        size=exp.Count(this=exp.Star()),
        agg=[aggregate_sql(c, ref(c.name, "s"), column_type) for c in one],
        one=[c.name for c in one],
        sets=[value_set(ref(c.name, "s"), len(sets)) for c in sets],
        cat=[c.name for c in sets],
        projection=[alias(ref("sbc_eq_class", "g"), "eq_class"), alias(ref("sbc_size", "g"), CLASS_SIZE)]
        + [alias(ref(c.name, "g"), c.name) for c in plan.qis],
    )
    return [create, *mode_updates_sql(plan.qis, table, rows)]


def class_mode_sql(c: Column, rows: exp.Query) -> exp.Query:
    """Each class's mode of QI ``c`` over ``rows`` (released rows with their classes)."""
    return _as_query(render("class_mode", labelled=rows, qi=c.name))


def mode_updates_sql(qis: Sequence[Column], table: str, rows: exp.Query) -> list[exp.Expression]:
    """One UPDATE per QI released as its class's mode, setting it in the class table."""
    return [
        render("update_class_mode", classes=table, qi=c.name, modes=class_mode_sql(c, rows.copy()))
        for c in qis
        if c.aggregate == "mode"
    ]


def create_rows_sql(
    plan: Plan, table: str, labels: str, row_id: exp.Expression, labelled: str | None = None
) -> exp.Expression:
    """The row table from the source's rows and their labels (read from the run's labelled
    source ``labelled`` when it made one)."""
    rows = released_rows(plan.source.name, labels, row_id, [c.name for c in plan.verbatim], labelled)
    return render(
        "create_rows",
        rows=table,
        labelled=rows,
        projection=[alias(ref(c.name, "s"), c.name) for c in plan.verbatim],
        order=[ref(c.name, "s") for c in plan.verbatim],
    )


def create_release_view_sql(plan: Plan, view: str, rows: str, classes: str) -> exp.Expression:
    return release_view_sql(plan.columns, view, rows, classes)


def release_view_sql(columns: Sequence[Column], view: str, rows: str, classes: str) -> exp.Expression:
    """The release view over a row and a class table, for a source of these columns (its
    query, ``.expression``, is what the view must show: verification compares the two)."""
    return render(
        "create_release_view",
        release=view,
        rows=rows,
        classes=classes,
        projection=release_projection(columns),
    )


def drop_release_sql(kinds: Mapping[str, str], names: Sequence[str]) -> list[exp.Expression]:
    """DROP statements for whichever of these names exist, each as the kind it is in
    ``kinds`` (db.object_kinds; a release written before the class table existed has its
    name as a table, not a view). Views go first, the last made first (a release's text view
    reads its release view, which reads its tables): PostgreSQL refuses to drop what a view
    still reads."""
    views = [name for name in reversed(names) if kinds.get(name) == "VIEW"]
    tables = [name for name in names if name in kinds and kinds[name] != "VIEW"]
    return [
        exp.Drop(tables=[exp.Table(this=ident(name))], kind=kinds[name], exists=True)
        for name in (*views, *tables)
    ]


def create_view_sql(plan: Plan, view: str, release: str) -> exp.Expression:
    return text_view_sql(plan.columns, view, release)


def text_view_sql(columns: Sequence[Column], view: str, release: exp.Query | str) -> exp.Expression:
    """The text view over ``release`` (the release view, or a query of its rows), for a
    source of these columns (see create_view.sql; verification renders its query over the
    row and class tables and compares it with the view)."""
    qis = [c for c in columns if c.role == "qi"]
    return render(
        "create_view",
        view=view,
        release=release,
        num=[c.name for c in qis if c.kind == "numeric" and not c.temporal and not c.one_value],
        tnum=[c.name for c in qis if c.kind == "numeric" and c.temporal and not c.one_value],
        one=[c.name for c in qis if c.kind == "numeric" and c.one_value],
        mode=[c.name for c in qis if c.kind != "numeric" and c.one_value],
        cat=[c.name for c in qis if c.kind != "numeric" and not c.one_value],
        verb=[c.name for c in columns if c.role in ("sensitive", "insensitive")],
        col=[c.name for c in columns if c.role != "identifier"],
    )


def comment_release_sql(plan: Plan, text: str) -> list[exp.Expression]:
    """COMMENT statements that store the run's provenance (``text``) on the release view
    and on its row and class tables."""
    return [
        comment_sql(name, kind, text)
        for name, kind in (
            (plan.output, "VIEW"),
            (plan.rows_table, "TABLE"),
            (plan.classes_table, "TABLE"),
        )
    ]


def comment_sql(name: str, kind: str, text: str) -> exp.Expression:
    """The COMMENT statement that stores ``text`` (a provenance) on the ``kind`` ``name``."""
    return exp.Comment(this=exp.Table(this=ident(name)), kind=kind, expression=exp.Literal.string(text))
