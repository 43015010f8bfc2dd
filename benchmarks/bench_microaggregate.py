"""Microaggregated against generalized releases of Adult at k = 10: NCP, SSE, IL1s and a
classifier's utility, with time and memory.

Adult's 30,162 clean rows are split 70/30 by a seeded shuffle. The training rows are
anonymized twice at k = 10 on the same QIs (age, education_num, hours_per_week numeric;
workclass, marital_status, race, sex categorical; income sensitive): ranges and sets
(``--recode generalize``) and one value per QI (``--recode microaggregate``, means and
modes). Each release is verified by the run. A gradient-boosted classifier of income is
trained on each release and on the original training rows, and all three are scored on
the same original test rows, which no release saw. Features: a released number as it is,
a range as its midpoint; a categorical value one-hot, a value set multi-hot (a test row is
its own one-value set). This is not ``evaluate --model``'s protocol (that one matches
release rows back to input rows through their ranges, which a released number does not
have), so its figures are comparable within this table only.

    python benchmarks/bench_microaggregate.py

Writes benchmarks/results/microaggregate.json. The NCP of the microaggregated release is
its clustering's, as if generalized: it clusters rows, where the range release clusters
Adult's distinct QI tuples, so the two clusterings differ a little.
"""

from __future__ import annotations

import resource
import sys
import time
from pathlib import Path

import duckdb
import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.append(str(Path(__file__).resolve().parents[1]))

import datasets
import record

import sbc_sql

K = 10
SEED = 0
NUMERIC = ["age", "education_num", "hours_per_week"]
CATEGORICAL = ["workclass", "marital_status", "race", "sex"]
TARGET = "income"


def split(con: duckdb.DuckDBPyConnection) -> None:
    """adult_train (70 %) and adult_test (30 %) of the QIs and the target, by a seeded shuffle."""
    columns = [*NUMERIC, *CATEGORICAL, TARGET]
    datasets.load_adult(con, "adult_all", columns=columns)
    ((n,),) = con.execute("SELECT COUNT(*) FROM adult_all").fetchall()
    order = np.random.default_rng(SEED).permutation(n)
    test = pd.DataFrame({"i": np.arange(n), "test": order < int(0.3 * n)})
    con.register("split_df", test)
    con.execute("CREATE TABLE numbered AS SELECT ROW_NUMBER() OVER () - 1 AS i, * FROM adult_all")
    names = ", ".join(columns)
    for table, flag in (("adult_train", "NOT"), ("adult_test", "")):
        con.execute(
            f"CREATE TABLE {table} AS SELECT {names} FROM numbered JOIN split_df USING (i) WHERE {flag} test"
        )


def features(frame: pd.DataFrame, vocabulary: dict[str, list[str]]) -> np.ndarray:
    """Numbers as they are (a range as its midpoint), categories one-hot or multi-hot."""
    parts = []
    for c in NUMERIC:
        if f"{c}_min" in frame:
            low, high = frame[f"{c}_min"].astype(float), frame[f"{c}_max"].astype(float)
            parts.append(((low + high) / 2).to_numpy()[:, None])
        else:
            parts.append(frame[c].astype(float).to_numpy()[:, None])
    for c in CATEGORICAL:
        values = vocabulary[c]
        hot = np.zeros((len(frame), len(values)))
        index = {v: j for j, v in enumerate(values)}
        for r, cell in enumerate(frame[c]):
            for v in cell if isinstance(cell, (list, np.ndarray)) else [cell]:
                if v in index:
                    hot[r, index[v]] = 1.0
        parts.append(hot)
    return np.hstack(parts)


def score(train: pd.DataFrame, test: pd.DataFrame, vocabulary: dict[str, list[str]]) -> tuple[float, float]:
    """Accuracy and binary F1 (positive: the rarer label, >50K) on the test rows."""
    from sklearn.ensemble import HistGradientBoostingClassifier
    from sklearn.metrics import accuracy_score, f1_score

    model = HistGradientBoostingClassifier(random_state=SEED)
    model.fit(features(train, vocabulary), train[TARGET])
    predicted = model.predict(features(test, vocabulary))
    return accuracy_score(test[TARGET], predicted), f1_score(test[TARGET], predicted, pos_label=">50K")


def main() -> None:
    con = duckdb.connect()
    split(con)
    train, test = con.sql("SELECT * FROM adult_train").df(), con.sql("SELECT * FROM adult_test").df()
    vocabulary = {c: sorted(v for v in train[c].unique() if v is not None) for c in CATEGORICAL}
    base_acc, base_f1 = score(train, test, vocabulary)
    print(f"Adult {len(train):,} training rows, {len(test):,} test rows, k = {K}")
    print(f"original: accuracy {base_acc:.4f}, F1 {base_f1:.4f}")
    header = (
        "release          seconds  peak RSS GB  total NCP     SSE       IL1s   accuracy (ratio)  F1 (ratio)"
    )
    print(header)
    runs = []
    for recode in ("generalize", "microaggregate"):
        t = time.perf_counter()
        with sbc_sql.anonymize(
            con,
            "adult_train",
            K,
            qi=[*NUMERIC, *CATEGORICAL],
            sensitive=TARGET,
            recode=recode,
            output=f"adult_{recode}",
        ) as result:
            m = result.measures
            assert m is not None and result.verdict is not None and result.verdict.ok
        seconds = time.perf_counter() - t
        released = con.sql(f"SELECT * FROM adult_{recode}").df()
        acc, f1 = score(released, test, vocabulary)
        rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20
        sse = "-" if m.sse is None else f"{m.sse:,.1f}"
        il1s = "-" if m.il1s is None else f"{m.il1s:,.1f}"
        print(
            f"{recode:<16}{seconds:>8.2f}{rss:>13.2f}{m.total_ncp:>11.4f}{sse:>10}{il1s:>11}"
            f"   {acc:.4f} ({acc / base_acc:.3f})  {f1:.4f} ({f1 / base_f1:.3f})"
        )
        runs.append(
            {
                "recode": recode,
                "seconds": round(seconds, 3),
                "peak_rss_gb": round(rss, 3),
                "classes": m.classes,
                "total_ncp": round(m.total_ncp, 6),
                "sse": None if m.sse is None else round(m.sse, 3),
                "il1s": None if m.il1s is None else round(m.il1s, 3),
                "accuracy": round(acc, 4),
                "f1": round(f1, 4),
            }
        )
    record.write(
        "microaggregate",
        {
            "k": K,
            "qis": {"numeric": NUMERIC, "categorical": CATEGORICAL},
            "original": {"accuracy": round(base_acc, 4), "f1": round(base_f1, 4)},
            "runs": runs,
        },
    )


if __name__ == "__main__":
    main()
