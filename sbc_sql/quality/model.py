"""Model utility of a release: how well a classifier trained on it predicts real people.

``evaluate --target COLUMN --model`` (the extra ``sbc-sql[ml]``: scikit-learn) trains one
classifier of ``target`` on the original and one on the release, and scores both on the same
held-out rows of the **original**:

* Features. A numeric QI is three numbers, its range's min, max and midpoint; a categorical
  QI is a multi-hot vector over the values seen in the model's training rows (NULL is a
  value); the verbatim columns other than the target are used as they are (numbers, dates
  and booleans as numbers, anything else one-hot over the training values). An original row
  is its own one-element range and set, so a row of the original and a row of the release
  live in the same feature space, and the release's model can score original rows.
* Rows. The release has no row ids, so each release row is matched to an input row it can
  stand for: one with the same verbatim values (the target among them) inside its class's
  ranges and sets, a row only one class can hold first, in eq_class order. Input rows left
  over are the suppressed ones. This is exact when classes holding the same verbatim values
  do not overlap; where they do, a matched row has the same label and features as the row
  it stands for, so only which of two such rows lands in the test set can differ.
* Split. The input's rows, sorted by every column read (so every engine gives the same
  order), are split 70/30, stratified by the label, by ``seed``. The original's model
  trains on the training rows; the release's on the release rows of the same training rows
  (suppressed rows are not in the release, so they are left out of its training set); both
  are tested on the original's test rows.
* Classifier: ``gbt`` (scikit-learn's HistGradientBoostingClassifier, seeded) or
  ``logistic`` (mean imputation, standard scaling, logistic regression).
* Scores: accuracy, and F1: binary for two labels (the positive label is the rarer one in
  the input), else macro; each with the ratio release / original (1: the release loses
  nothing a model can use).

The rows come through the engine as Arrow, one query for the input and one for the release
(:func:`rows_sql`); no value is ever printed.
"""

from __future__ import annotations

import warnings
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa
from sqlglot import exp

from .. import choices
from ..engines.base import Engine
from ..errors import InputError
from ..model import Column
from ..sql.nodes import alias, as_number, ref, text_list
from ..sql.templates import render
from ..stages.measure import Layout

CLASSIFIERS = choices.CLASSIFIERS
#: the share of the input's rows held out for testing
TEST_SHARE = 0.3
INSTALL_HINT = "pip install 'sbc-sql[ml]'"


def require() -> None:
    """scikit-learn is installed, or one error naming the extra that installs it."""
    try:
        import sklearn  # noqa: F401
    except ImportError:
        raise InputError(f"--model needs scikit-learn, which is not installed: {INSTALL_HINT}") from None


def check_classifier(classifier: str) -> None:
    if classifier not in CLASSIFIERS:
        raise InputError(
            f"--classifier {classifier!r} is not one of {', '.join(CLASSIFIERS)}; write e.g. --classifier gbt"
        )


@dataclass(frozen=True)
class ModelUtility:
    """The two models' scores on the original's test rows."""

    classifier: str
    seed: int
    average: str
    train_original: int
    train_release: int
    test: int
    accuracy_original: float
    accuracy_release: float | None
    f1_original: float
    f1_release: float | None

    @property
    def accuracy_ratio(self) -> float | None:
        return _ratio(self.accuracy_release, self.accuracy_original)

    @property
    def f1_ratio(self) -> float | None:
        return _ratio(self.f1_release, self.f1_original)


def _ratio(release: float | None, original: float) -> float | None:
    return None if release is None or not original else release / original


# ---------------------------------------------------------------------------------------
# the rows


def _text(e: exp.Expression) -> exp.Expression:
    return exp.cast(e, "VARCHAR")


def rows_sql(layout: Layout, table: str, target: Column, *, release: bool) -> exp.Expression:
    """The one query that pulls what the models read from the input (``release=False``:
    per QI its value) or the release (``eq_class``, per numeric QI min, max and NULL flag,
    per categorical QI its set as text); then the verbatim columns other than the target
    as stored, then the target as text. Columns are named ``sbc_0``, ``sbc_1``, ..."""
    values: list[exp.Expression] = []
    if release:
        values.append(ref("eq_class"))
    for c in layout.qis:
        if c.kind == "numeric" and release:
            values += [
                as_number(ref(c.name + "_min"), c),
                as_number(ref(c.name + "_max"), c),
                ref(c.name + "_has_null"),
            ]
        elif c.kind == "numeric":
            values.append(as_number(ref(c.name), c))
        elif release:
            values.append(exp.cast(ref(c.name), text_list()))
        else:
            values.append(_text(ref(c.name)))
    values += [ref(c.name) for c in _others(layout, target)]
    values.append(_text(ref(target.name)))
    return render("model_rows", source=table, value=[alias(v, f"sbc_{i}") for i, v in enumerate(values)])


def _others(layout: Layout, target: Column) -> tuple[Column, ...]:
    return tuple(c for c in layout.verbatim if c.name != target.name)


def _sorted(table: pa.Table) -> pa.Table:
    """The rows in one order on every engine: by every column, NULL last."""
    import pyarrow.compute as pc

    if table.num_rows == 0 or table.num_columns == 0:
        return table
    keys = [(name, "ascending") for name in table.column_names]
    return table.take(pc.sort_indices(table, sort_keys=keys))  # NULL last


def _floats(column: pa.ChunkedArray | pa.Array) -> np.ndarray:
    return np.array(column.to_pylist(), dtype=np.float64)


def _as_feature(column: pa.ChunkedArray) -> tuple[str, np.ndarray | list[Any]]:
    """A verbatim column as the models read it: ("number", floats) or ("text", values)."""
    import pyarrow.compute as pc

    t = column.type
    if pa.types.is_boolean(t) or pa.types.is_integer(t) or pa.types.is_floating(t) or pa.types.is_decimal(t):
        return "number", _floats(pc.cast(column, pa.float64()))
    if pa.types.is_date(t) or pa.types.is_timestamp(t):
        # days or microseconds since 1970, as a date or timestamp QI is read
        unit, ints = (pa.date32(), pa.int32()) if pa.types.is_date(t) else (pa.timestamp("us"), pa.int64())
        return "number", _floats(pc.cast(pc.cast(column, unit), ints))
    return "text", [None if v is None else str(v) for v in column.to_pylist()]


@dataclass
class _Data:
    """Every input row's features in both forms, before encoding; labels as codes."""

    ranges: list[tuple[np.ndarray, np.ndarray]]  # per numeric QI: (min, max) per row, released form
    points: list[np.ndarray]  # per numeric QI: the value per row
    sets: list[list[tuple[int, ...]]]  # per categorical QI: the released set's codes per row
    items: list[np.ndarray]  # per categorical QI: the value's code per row
    plain: list[tuple[str, Any]]  # per other verbatim column: ("number", floats) or ("text", codes)
    labels: np.ndarray
    held: np.ndarray  # the input row has a release row (not suppressed)
    unmatched: int


def _codes(values: Sequence[Any], book: dict[Any, int]) -> np.ndarray:
    return np.array([book.setdefault(v, len(book)) for v in values], dtype=np.int64)


class _Candidates:
    """Which input rows of one group (same verbatim values) lie inside a class: the rows
    sorted on the first numeric QI, so a class's range on it is a slice to test further."""

    def __init__(
        self,
        layout: Layout,
        rows: np.ndarray,
        o_num: dict[str, np.ndarray],
        o_cat: dict[str, np.ndarray],
        books: dict[str, dict[Any, int]],
    ) -> None:
        self.layout = layout
        self.lead = next((c.name for c in layout.qis if c.kind == "numeric"), None)
        if self.lead is not None:
            rows = rows[np.argsort(o_num[self.lead][rows], kind="stable")]  # NaN last
            lead = o_num[self.lead][rows]
            self.lead_values = lead
            self.numbers = int(np.count_nonzero(~np.isnan(lead)))
        self.rows = rows
        self.num = {name: v[rows] for name, v in o_num.items()}
        self.cat = {name: v[rows] for name, v in o_cat.items()}
        self.sizes = {name: len(book) for name, book in books.items()}

    def inside(
        self,
        r: int,
        boxes: dict[str, tuple[np.ndarray, np.ndarray, np.ndarray]],
        r_sets: dict[str, list[tuple[int, ...]]],
    ) -> np.ndarray:
        """The input rows (indices into the input) inside the class of release row ``r``."""
        picked = np.arange(len(self.rows))
        if self.lead is not None:
            lo, hi, has_null = boxes[self.lead]
            parts = []
            if not np.isnan(lo[r]):
                values = self.lead_values[: self.numbers]
                start = int(np.searchsorted(values, lo[r], side="left"))
                stop = int(np.searchsorted(values, hi[r], side="right"))
                parts.append(np.arange(start, stop))
            if has_null[r]:
                parts.append(np.arange(self.numbers, len(self.rows)))
            picked = np.concatenate(parts) if parts else np.zeros(0, dtype=np.int64)
        for c in self.layout.qis:
            if not len(picked):
                break
            if c.name == self.lead:
                continue
            if c.kind == "numeric":
                lo, hi, has_null = boxes[c.name]
                v = self.num[c.name][picked]
                with np.errstate(invalid="ignore"):
                    keep = (v >= lo[r]) & (v <= hi[r])
                picked = picked[keep | (np.isnan(v) & has_null[r])]
            else:
                member = np.zeros(self.sizes[c.name], dtype=bool)
                member[list(r_sets[c.name][r])] = True
                picked = picked[member[self.cat[c.name][picked]]]
        return np.asarray(self.rows[picked], dtype=np.int64)


def _match(rows: int, capacity: Sequence[int], hits: Sequence[np.ndarray]) -> np.ndarray:
    """Per row, the class it is matched to (-1: none), as many rows matched as can be: a
    row that one class alone can hold fills that class first (no larger matching needs it
    elsewhere), the rest by a maximum flow over the classes' remaining rows."""
    reach = np.zeros(rows, dtype=np.int64)
    for hit in hits:
        reach[hit] += 1
    out = np.full(rows, -1, dtype=np.int64)
    left = np.array(capacity, dtype=np.int64)
    for j, hit in enumerate(hits):
        only = hit[reach[hit] == 1][: left[j]]
        out[only] = j
        left[j] -= len(only)
    # the rest: a maximum flow source -> shared row (1) -> class (1) -> sink (rows it has left)
    pairs = [(hit[reach[hit] > 1], j) for j, hit in enumerate(hits) if left[j]]
    pairs = [(shared, j) for shared, j in pairs if len(shared)]
    if not pairs:
        return out
    from scipy import sparse
    from scipy.sparse.csgraph import maximum_flow

    classes = len(hits)
    sink = 1 + rows + classes
    tails = [np.zeros(rows, dtype=np.int64)]
    heads = [1 + np.arange(rows)]
    caps = [np.ones(rows, dtype=np.int32)]
    for shared, j in pairs:
        tails.append(1 + shared)
        heads.append(np.full(len(shared), 1 + rows + j))
        caps.append(np.ones(len(shared), dtype=np.int32))
    tails.append(1 + rows + np.arange(classes))
    heads.append(np.full(classes, sink))
    caps.append(left.astype(np.int32))
    graph = sparse.csr_array(
        (np.concatenate(caps), (np.concatenate(tails), np.concatenate(heads))), shape=(sink + 1, sink + 1)
    )
    flow = sparse.csr_array(maximum_flow(graph, 0, sink, method="dinic").flow)
    used = sparse.coo_array(flow[1 : 1 + rows, 1 + rows : 1 + rows + classes])
    positive = used.data > 0
    out[used.row[positive]] = used.col[positive]
    return out


def _data(layout: Layout, original: pa.Table, release: pa.Table, target: Column) -> _Data:
    original = _sorted(original)
    n = original.num_rows
    others = _others(layout, target)
    ocols = original.columns
    rcols = release.columns
    # input: QIs, then the other verbatim columns, then the target
    o_num: dict[str, np.ndarray] = {}
    o_cat: dict[str, np.ndarray] = {}
    books: dict[str, dict[Any, int]] = {}
    i = 0
    for c in layout.qis:
        if c.kind == "numeric":
            o_num[c.name] = _floats(ocols[i])
        else:
            books[c.name] = {}
            o_cat[c.name] = _codes(ocols[i].to_pylist(), books[c.name])
        i += 1
    verbatim_o = [ocols[i + j].to_pylist() for j in range(len(others))]
    plain: list[tuple[str, Any]] = []
    for j, _ in enumerate(others):
        kind, values = _as_feature(ocols[i + j])
        plain.append((kind, values if kind == "number" else _codes(list(values), {})))
    label_values = ocols[i + len(others)].to_pylist()
    label_book: dict[Any, int] = {}
    for v in sorted({v for v in label_values if v is not None}):
        label_book[v] = len(label_book)
    labels = _codes(label_values, label_book)
    keys = list(zip(*verbatim_o, label_values, strict=True)) if n else []

    # release: eq_class, per numeric QI min, max, has_null, per categorical QI its set, then
    # the verbatim columns and the target
    r_class = rcols[0].to_pylist()
    boxes: dict[str, tuple[np.ndarray, np.ndarray, np.ndarray]] = {}
    r_sets: dict[str, list[tuple[int, ...]]] = {}
    i = 1
    for c in layout.qis:
        if c.kind == "numeric":
            has_null = np.array([bool(v) for v in rcols[i + 2].to_pylist()], dtype=bool)
            boxes[c.name] = (_floats(rcols[i]), _floats(rcols[i + 1]), has_null)
            i += 3
        else:
            book = books[c.name]
            r_sets[c.name] = [
                tuple(sorted({book.setdefault(v, len(book)) for v in (values or [])}))
                for values in rcols[i].to_pylist()
            ]
            i += 1
    r_keys = list(zip(*[rcols[i + j].to_pylist() for j in range(len(others) + 1)], strict=True))

    # per class and verbatim values, the release rows; each class's box from its first row
    wanted: dict[tuple[Any, ...], dict[Any, int]] = defaultdict(lambda: defaultdict(int))
    first: dict[Any, int] = {}
    for r, (cls, key) in enumerate(zip(r_class, r_keys, strict=True)):
        wanted[key][cls] += 1
        first.setdefault(cls, r)
    by_key: dict[tuple[Any, ...], list[int]] = defaultdict(list)
    for row, key in enumerate(keys):
        by_key[key].append(row)

    home = np.full(n, -1, dtype=np.int64)  # per input row, the first release row of its class
    unmatched = 0
    for key, classes in wanted.items():
        group = _Candidates(layout, np.array(by_key.get(key, []), dtype=np.int64), o_num, o_cat, books)
        rows = group.rows
        position = np.full(n, -1, dtype=np.int64)
        position[rows] = np.arange(len(rows))
        order = sorted(classes, key=lambda c: (c is None, c))
        hits = [position[group.inside(first[cls], boxes, r_sets)] for cls in order]
        homes = _match(len(rows), [classes[c] for c in order], hits)
        got = homes >= 0
        home[rows[got]] = [first[order[j]] for j in homes[got].tolist()]
        unmatched += sum(classes.values()) - int(got.sum())

    held = home >= 0
    safe = np.where(held, home, 0)
    ranges: list[tuple[np.ndarray, np.ndarray]] = []
    points: list[np.ndarray] = []
    sets: list[list[tuple[int, ...]]] = []
    items: list[np.ndarray] = []
    for c in layout.qis:
        if c.kind == "numeric":
            lo, hi, _ = boxes[c.name]
            if len(lo):
                ranges.append((lo[safe], hi[safe]))
            else:
                ranges.append((np.full(n, np.nan), np.full(n, np.nan)))
            points.append(o_num[c.name])
        else:
            released = r_sets[c.name]
            sets.append([released[h] if h >= 0 else () for h in home.tolist()])
            items.append(o_cat[c.name])
    return _Data(ranges, points, sets, items, plain, labels, held, unmatched)


# ---------------------------------------------------------------------------------------
# features


def _multi_hot(rows: Sequence[Sequence[int]], vocabulary: np.ndarray) -> np.ndarray:
    where = {int(v): i for i, v in enumerate(vocabulary.tolist())}
    out = np.zeros((len(rows), len(where)), dtype=np.float64)
    for r, codes in enumerate(rows):
        for code in codes:
            i = where.get(code)
            if i is not None:
                out[r, i] = 1.0
    return out


class _Encoder:
    """Features of rows in either form, with the vocabularies of one model's training rows."""

    def __init__(self, data: _Data, train: np.ndarray, *, release: bool) -> None:
        self.data = data
        self.vocab: list[np.ndarray] = []
        for j in range(len(data.items)):
            if release:
                seen = {code for r in train.tolist() for code in data.sets[j][r]}
                self.vocab.append(np.array(sorted(seen), dtype=np.int64))
            else:
                self.vocab.append(np.unique(data.items[j][train]))
        self.text_vocab: list[np.ndarray | None] = [
            np.unique(v[train]) if kind == "text" else None for kind, v in data.plain
        ]

    def features(self, rows: np.ndarray, *, release: bool) -> np.ndarray:
        d = self.data
        parts: list[np.ndarray] = []
        for (lo, hi), point in zip(d.ranges, d.points, strict=True):
            if release:
                a, b = lo[rows], hi[rows]
            else:
                a = b = point[rows]
            parts.append(np.column_stack([a, b, (a + b) / 2.0]))
        for j, vocab in enumerate(self.vocab):
            if release:
                chosen = [d.sets[j][r] for r in rows.tolist()]
            else:
                chosen = [(int(v),) for v in d.items[j][rows].tolist()]
            parts.append(_multi_hot(chosen, vocab))
        for (kind, values), words in zip(d.plain, self.text_vocab, strict=True):
            if kind == "number":
                parts.append(values[rows].reshape(-1, 1))
            else:
                assert words is not None  # a text column has its vocabulary (above)
                parts.append(_multi_hot([(int(v),) for v in values[rows].tolist()], words))
        if not parts:
            return np.zeros((len(rows), 0))
        return np.hstack(parts)


def _classifier(name: str, seed: int) -> Any:
    from sklearn.ensemble import HistGradientBoostingClassifier
    from sklearn.impute import SimpleImputer
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    if name == "gbt":
        return HistGradientBoostingClassifier(random_state=seed)
    return make_pipeline(
        SimpleImputer(strategy="mean", keep_empty_features=True),
        StandardScaler(),
        LogisticRegression(max_iter=2000, random_state=seed),
    )


def _fit_predict(name: str, seed: int, x: np.ndarray, y: np.ndarray, test: np.ndarray) -> np.ndarray:
    """The model's predictions for ``test``; a training set of one label predicts it."""
    if len(np.unique(y)) == 1:
        return np.full(len(test), y[0])
    from sklearn.exceptions import ConvergenceWarning

    model = _classifier(name, seed)
    with warnings.catch_warnings():
        # a model that has not converged still scores; its score says how well it did
        warnings.simplefilter("ignore", ConvergenceWarning)
        model.fit(x, y)
    return np.asarray(model.predict(test))


def model_utility(
    engine: Engine, layout: Layout, original: str, release: str, target: Column, classifier: str, seed: int
) -> ModelUtility:
    """Train on the original and on the release, score both on the original's test rows
    (this module's docstring)."""
    require()
    check_classifier(classifier)
    from sklearn.metrics import accuracy_score, f1_score
    from sklearn.model_selection import train_test_split

    source = engine.fetch_arrow(rows_sql(layout, original, target, release=False))
    released = engine.fetch_arrow(rows_sql(layout, release, target, release=True))
    data = _data(layout, source, released, target)
    n = len(data.labels)
    counts = np.bincount(data.labels) if n else np.zeros(0, dtype=np.int64)
    if n < 2 or len(counts) < 2:
        raise InputError(
            f"--model needs at least two labels in '{target.name}'; it holds {len(counts)} on {n} rows"
        )
    if counts.min() < 2:
        raise InputError(
            f"--model splits the rows stratified by '{target.name}', which needs two rows of each "
            f"label; {int((counts < 2).sum())} label(s) have one row"
        )
    test_rows = max(round(n * TEST_SHARE), len(counts))
    if n - test_rows < len(counts):
        raise InputError(f"--model needs more rows: {n} rows cannot hold {len(counts)} labels in both splits")
    train, test = train_test_split(
        np.arange(n), test_size=test_rows, random_state=seed, stratify=data.labels, shuffle=True
    )
    train, test = np.sort(train), np.sort(test)
    if len(counts) == 2:
        # the rarer label is the positive one (the later one on a tie)
        average, positive = "binary", int(np.argmin(counts)) if counts[0] != counts[1] else 1
    else:
        average, positive = "macro", 1

    def scores(truth: np.ndarray, predicted: np.ndarray) -> tuple[float, float]:
        f1 = f1_score(truth, predicted, average=average, pos_label=positive, zero_division=0)
        return float(accuracy_score(truth, predicted)), float(f1)

    y_test = data.labels[test]
    plain = _Encoder(data, train, release=False)
    predicted = _fit_predict(
        classifier,
        seed,
        plain.features(train, release=False),
        data.labels[train],
        plain.features(test, release=False),
    )
    acc_o, f1_o = scores(y_test, predicted)
    kept = train[data.held[train]]
    acc_r: float | None = None
    f1_r: float | None = None
    if len(kept):
        coarse = _Encoder(data, kept, release=True)
        predicted = _fit_predict(
            classifier,
            seed,
            coarse.features(kept, release=True),
            data.labels[kept],
            coarse.features(test, release=False),
        )
        acc_r, f1_r = scores(y_test, predicted)
    return ModelUtility(
        classifier=classifier,
        seed=seed,
        average=average,
        train_original=len(train),
        train_release=len(kept),
        test=len(test),
        accuracy_original=acc_o,
        accuracy_release=acc_r,
        f1_original=f1_o,
        f1_release=f1_r,
    )
