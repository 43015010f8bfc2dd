"""Background knowledge: what an adversary believes about a row's sensitive value from its QIs.

A belief is a distribution over the sensitive column's value codes, the same for every
row with the same QI key, so each estimator works on the distinct keys and returns one
row of beliefs per key plus every row's key. The estimators:

* ``nb`` (default): naive Bayes, omega(q)_s proportional to p_s prod_i P(q_i | s) with
  Laplace smoothing (alpha = 1), numeric QIs cut into at most :data:`BINS`
  equal-frequency bins for the estimate only (NULL a bin of its own);
* ``combo``: the per-combination shares shrunk toward naive Bayes,
  (c(q, s) + a nb(q)_s) / (c(q) + a) with a = :data:`SHRINK` (unsmoothed, a key seen once
  would get a point mass and sit at divergence 1 from almost every other);
* ``kernel``: kernel regression over the exact keys, Epanechnikov on range-normalised
  numerics with bandwidth :data:`BANDWIDTH`, equality on categoricals.

:func:`from_table` reads knowledge the user gives as a keyed table instead.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pyarrow as pa

from ...errors import InputError
from ..model import QIData
from .options import BackgroundOptions, UserKnowledge

#: naive Bayes: at most this many equal-frequency bins per numeric QI
BINS = 20
#: naive Bayes: Laplace smoothing
ALPHA = 1.0
#: combo: the weight of the naive-Bayes prior, in rows
SHRINK = 5.0
#: kernel: bandwidth on range-normalised numerics
BANDWIDTH = 0.3
#: kernel: the most distinct keys it compares pairwise
KERNEL_MAX_KEYS = 20_000
#: a user's distribution may miss 1 by this much (it is then renormalised)
SUM_TOLERANCE = 1e-6


def sensitive_column(data: QIData) -> tuple[np.ndarray, int]:
    """The one sensitive column's codes and its number of values; an InputError when there
    is none or more than one."""
    sens = data.sensitive
    if sens is None or sens.n_columns == 0:
        raise InputError("background knowledge is about a sensitive column: declare one with --sensitive")
    if sens.n_columns > 1:
        raise InputError(
            f"background knowledge covers one sensitive column, the input declares {sens.n_columns} "
            f"({', '.join(sens.names)}): declare one with --sensitive"
        )
    return sens.codes[0].astype(np.int64), len(sens.counts[0])


def estimate(data: QIData, options: BackgroundOptions) -> tuple[np.ndarray, np.ndarray]:
    """(beliefs, key): one distribution per distinct key (U x m) and each row's key index."""
    codes, m = sensitive_column(data)
    if options.knowledge is not None:
        return _user_rows(data, options.knowledge, m)
    if options.estimator == "kernel":
        return kernel(data, codes, m)
    keys = binned_keys(data)
    key, first = _distinct(keys)
    nb = naive_bayes(keys, key, first, codes, m)
    if options.estimator == "combo":
        return combo(nb, key, codes, m), key
    return nb, key


def binned_keys(data: QIData) -> np.ndarray:
    """(n, d) int64: each QI as the naive-Bayes estimate sees it (numerics binned)."""
    n = data.n_rows
    out = np.empty((n, data.n_qis), dtype=np.int64)
    for q in range(data.n_qis):
        col = data.columns[q]
        out[:, q] = _bins(col) if data.numeric[q] else col.astype(np.int64)
    return out


def _bins(col: np.ndarray) -> np.ndarray:
    """Equal-frequency bins of a numeric column (exact values when it has at most BINS);
    NULL gets the bin after the last."""
    null = np.isnan(col)
    finite = col[~null]
    out = np.zeros(len(col), dtype=np.int64)
    if len(finite):
        distinct = np.unique(finite)
        if len(distinct) <= BINS:
            edges = distinct[1:]
        else:
            edges = np.unique(np.quantile(finite, np.arange(1, BINS) / BINS, method="inverted_cdf"))
            edges = edges[edges > distinct[0]]
        out[~null] = np.searchsorted(edges, finite, side="right")
        out[null] = len(edges) + 1
    return out


def _distinct(keys: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Each row's distinct-key index (keys numbered in order of first appearance is not
    needed: np.unique's sorted order is deterministic) and one row per key."""
    _, first, key = np.unique(keys, axis=0, return_index=True, return_inverse=True)
    return key.reshape(-1).astype(np.int64), first


def naive_bayes(
    keys: np.ndarray, key: np.ndarray, first: np.ndarray, codes: np.ndarray, m: int
) -> np.ndarray:
    """Naive Bayes beliefs per distinct key (rows of ``keys`` at ``first``)."""
    class_count = np.bincount(codes, minlength=m).astype(np.float64)
    with np.errstate(divide="ignore"):
        log_b = np.log(class_count / max(len(codes), 1))
    log_b = np.broadcast_to(log_b, (len(first), m)).copy()
    for q in range(keys.shape[1]):
        col = keys[:, q]
        values, idx = np.unique(col, return_inverse=True)
        idx = idx.reshape(-1)
        joint = np.bincount(idx * m + codes, minlength=len(values) * m).reshape(len(values), m)
        cond = np.log(joint + ALPHA) - np.log(class_count + ALPHA * len(values))[None, :]
        log_b += cond[idx[first]]
    return _normalise_logs(log_b)


def _normalise_logs(log_b: np.ndarray) -> np.ndarray:
    top = np.max(log_b, axis=1, keepdims=True)
    top = np.where(np.isfinite(top), top, 0.0)
    with np.errstate(invalid="ignore"):
        w = np.exp(log_b - top)
    w = np.nan_to_num(w, nan=0.0)
    out: np.ndarray = w / w.sum(axis=1, keepdims=True)
    return out


def combo(nb: np.ndarray, key: np.ndarray, codes: np.ndarray, m: int) -> np.ndarray:
    """Each key's own shares, shrunk toward its naive-Bayes belief by SHRINK rows."""
    u = nb.shape[0]
    c = np.bincount(key * m + codes, minlength=u * m).reshape(u, m).astype(np.float64)
    out: np.ndarray = (c + SHRINK * nb) / (c.sum(axis=1, keepdims=True) + SHRINK)
    return out


def kernel(data: QIData, codes: np.ndarray, m: int) -> tuple[np.ndarray, np.ndarray]:
    """Kernel-regression beliefs over the exact keys (range-normalised numerics)."""
    parts = [
        np.where(np.isnan(c := data.scaled(q)), -1.0, c) if data.numeric[q] else data.columns[q]
        for q in range(data.n_qis)
    ]
    exact = np.column_stack([np.asarray(p, dtype=np.float64) for p in parts]) if parts else np.zeros((0, 0))
    uniq, inv = np.unique(exact, axis=0, return_inverse=True)
    inv = inv.reshape(-1).astype(np.int64)
    u = len(uniq)
    if u > KERNEL_MAX_KEYS:
        raise InputError(
            f"--bk-estimator kernel compares every pair of the {u:,} distinct QI combinations, "
            f"more than {KERNEL_MAX_KEYS:,}: use --bk-estimator nb or combo"
        )
    counts = np.bincount(inv * m + codes, minlength=u * m).reshape(u, m).astype(np.float64)
    out = np.empty((u, m))
    for a in range(0, u, 512):
        w = np.ones((min(a + 512, u) - a, u))
        for q in range(data.n_qis):
            x, y = uniq[a : a + 512, q][:, None], uniq[None, :, q]
            if data.numeric[q]:
                null_x, null_y = x < 0, y < 0
                z = np.abs(x - y) / BANDWIDTH
                k = np.where(
                    null_x | null_y, (null_x & null_y).astype(np.float64), np.maximum(0.0, 1 - z * z)
                )
                w *= k
            else:
                w *= x == y
        num = w @ counts
        out[a : a + 512] = num / num.sum(axis=1, keepdims=True)
    return out, inv


def _user_rows(data: QIData, knowledge: UserKnowledge, m: int) -> tuple[np.ndarray, np.ndarray]:
    if knowledge.matrix.shape[1] != m:
        raise ValueError("user knowledge must have one column per sensitive value")
    order = np.argsort(knowledge.position, kind="stable")
    at = np.searchsorted(knowledge.position, data.position, sorter=order)
    at = np.minimum(at, len(order) - 1)
    rows = order[at]
    if len(rows) and not np.array_equal(knowledge.position[rows], data.position):
        raise ValueError("user knowledge must cover every row")
    return knowledge.matrix[rows], np.arange(data.n_rows, dtype=np.int64)


# ---------------------------------------------------------------------------------------
# the user's table


def from_table(
    table: pa.Table,
    records: pa.Table,
    position: np.ndarray,
    values: Sequence[object],
    sensitive: str,
) -> UserKnowledge:
    """Background knowledge from a keyed table, matched to the rows.

    ``table``: one column per QI it depends on (named as the QI), then either one column
    per sensitive value (wide: the header is the value) or the two columns
    ``sensitive_value, probability`` (long). ``records``: the rows' QI columns (values),
    one row per entry of ``position`` (the rows' source positions). ``values``: the
    sensitive column's values in code order. Every problem found is one InputError line
    naming the column or the count, never a value.
    """
    problems: list[str] = []
    keys = [c for c in table.column_names if c in records.column_names]
    rest = [c for c in table.column_names if c not in keys]
    names = ["" if v is None else str(v) for v in values]
    lookup = {name: i for i, name in enumerate(names) if values[i] is not None}
    m = len(values)
    if not keys and table.num_rows != 1:
        problems.append(
            f"the background knowledge names none of the QIs ({', '.join(records.column_names)}) as a key "
            f"column, so it must have one row, not {table.num_rows:,}"
        )
    key_cols = []
    for c in keys:
        try:
            key_cols.append(table.column(c).cast(records.schema.field(c).type).to_pylist())
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
            problems.append(f"key column '{c}' of the background knowledge cannot be read as the QI's type")
    if problems:
        raise InputError("; ".join(problems))
    long = set(rest) == {"sensitive_value", "probability"}
    if long:
        probs, key_rows = _long(table, key_cols, lookup, m, sensitive, problems)
    else:
        probs, key_rows = _wide(table, rest, key_cols, lookup, m, sensitive, problems)
    if problems:
        raise InputError("; ".join(problems))
    index: dict[tuple[object, ...], int] = {}
    duplicated = 0
    for i, kr in enumerate(key_rows):
        if kr in index:
            duplicated += 1
        index[kr] = i
    if duplicated:
        problems.append(f"{duplicated:,} key row(s) of the background knowledge repeat an earlier key")
    record_cols = [records.column(c).to_pylist() for c in keys]
    n = records.num_rows
    match = np.full(n, -1, dtype=np.int64)
    for r, kr in enumerate(zip(*record_cols, strict=True) if keys else [()] * n):
        match[r] = index.get(tuple(kr), -1)
    unmatched = int((match < 0).sum())
    if unmatched:
        problems.append(
            f"{unmatched:,} row(s) of the input match no key row of the background knowledge "
            f"(keyed on {', '.join(keys) or 'nothing'})"
        )
    if problems:
        raise InputError("; ".join(problems))
    return UserKnowledge(np.asarray(position, dtype=np.int64), probs[match])


def _check_probs(probs: np.ndarray, where: str, problems: list[str]) -> np.ndarray:
    """Finite, >= 0, each row summing to 1 within SUM_TOLERANCE; renormalised."""
    bad = ~np.isfinite(probs) | (probs < 0)
    if bad.any():
        problems.append(f"{int(bad.sum()):,} probability cell(s) {where} are not finite numbers >= 0")
        return probs
    total = probs.sum(axis=1)
    off = np.abs(total - 1.0) > SUM_TOLERANCE
    if off.any():
        problems.append(
            f"{int(off.sum()):,} key row(s) of the background knowledge have probabilities that do not "
            f"sum to 1 (within {SUM_TOLERANCE:g})"
        )
        return probs
    out: np.ndarray = probs / total[:, None]
    return out


def _wide(
    table: pa.Table,
    columns: list[str],
    key_cols: list[list[object]],
    lookup: dict[str, int],
    m: int,
    sensitive: str,
    problems: list[str],
) -> tuple[np.ndarray, list[tuple[object, ...]]]:
    probs = np.zeros((table.num_rows, m))
    if not columns:
        problems.append(
            "the background knowledge has no probability columns: give one column per value of "
            f"'{sensitive}', or the columns sensitive_value and probability"
        )
    for c in columns:
        try:
            col = table.column(c).cast(pa.float64()).to_numpy(zero_copy_only=False)
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
            problems.append(f"column '{c}' of the background knowledge is neither a QI nor numeric")
            continue
        if c in lookup:
            probs[:, lookup[c]] = col
        elif np.any(np.nan_to_num(col, nan=1.0) != 0):
            problems.append(
                f"column '{c}' of the background knowledge is not a value of '{sensitive}' "
                "and holds non-zero probabilities"
            )
    probs = _check_probs(probs, "of the background knowledge", problems)
    return probs, list(zip(*key_cols, strict=True)) if key_cols else [()] * table.num_rows


def _long(
    table: pa.Table,
    key_cols: list[list[object]],
    lookup: dict[str, int],
    m: int,
    sensitive: str,
    problems: list[str],
) -> tuple[np.ndarray, list[tuple[object, ...]]]:
    rows = list(zip(*key_cols, strict=True)) if key_cols else [()] * table.num_rows
    try:
        p = table.column("probability").cast(pa.float64()).to_numpy(zero_copy_only=False)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
        problems.append("column 'probability' of the background knowledge is not numeric")
        return np.zeros((0, m)), []
    value = table.column("sensitive_value").cast(pa.string()).to_pylist()
    index: dict[tuple[object, ...], int] = {}
    for kr in rows:
        index.setdefault(kr, len(index))
    probs = np.zeros((len(index), m))
    seen = np.zeros((len(index), m), dtype=bool)
    unknown = repeated = 0
    for kr, v, pv in zip(rows, value, p, strict=True):
        j = lookup.get(v) if v is not None else None
        if j is None:
            unknown += int(pv != 0)
            continue
        i = index[kr]
        repeated += int(seen[i, j])
        seen[i, j] = True
        probs[i, j] = pv
    if unknown:
        problems.append(
            f"{unknown:,} row(s) of the background knowledge give a non-zero probability to a "
            f"sensitive_value that is not a value of '{sensitive}'"
        )
    if repeated:
        problems.append(f"{repeated:,} row(s) of the background knowledge repeat a key and sensitive_value")
    probs = _check_probs(probs, "in column 'probability'", problems)
    return probs, list(index)
