"""What the baselines' privacy criteria cost: Mondrian and k-member on UCI Adult with and
without l-diversity, t-closeness and beta-likeness on occupation.

Adult, all 30,162 clean rows, QIs age, workclass, education, marital-status, race, sex and
native-country, occupation sensitive, k = 10: each algorithm for k alone, then with distinct
l-diversity l = 3, t-closeness t = 0.2 and enhanced beta-likeness beta = 1, each at the
default suppression budget of 1 %. Figures per run: total NCP (%) of the labels (numpy twin
of the SQL NCP; a suppressed row costs 1 on every QI), suppressed rows, classes and seconds
of the clustering alone. Every class is checked against the rule before a run is counted.
Writes benchmarks/results/criteria_baselines.md and .json.

    python benchmarks/bench_criteria_baselines.py
    python benchmarks/bench_criteria_baselines.py --rows 5000
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
import time
from pathlib import Path

import duckdb
import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
# the installed sbc_sql first (its kernels are compiled at install); else the checkout
sys.path.append(str(Path(__file__).resolve().parents[1]))

import datasets
import record

from sbc_sql import engines
from sbc_sql.cluster import registry
from sbc_sql.cluster.model import QIData
from sbc_sql.cluster.ncp import total_ncp
from sbc_sql.cluster.registry import ClusterOptions
from sbc_sql.cluster.sensitive import Rule, Sensitive
from sbc_sql.errors import InputError
from sbc_sql.session import make_options, prepare

QIS = ["age", "workclass", "education", "marital_status", "race", "sex", "native_country"]
SENSITIVE = "occupation"
K = 10
ALGORITHMS = ("mondrian", "kmember")
RULES = {
    "k alone": Rule(),
    "l-diversity l=3": Rule(l=3),
    "t-closeness t=0.2": Rule(t=0.2),
    "beta-likeness beta=1": Rule(beta=1.0),
}


def adult(rows: int | None) -> QIData:
    """Adult's QIData as the pipeline pulls it, with occupation as value codes beside it
    (value order, each value's count in these rows)."""
    con = duckdb.connect()
    datasets.load_adult(con, "adult", rows, columns=QIS + [SENSITIVE])
    options = make_options(2, qi=QIS, sensitive=[SENSITIVE], drop=[])
    data = prepare(engines.connect(con), "adult", options).data
    assert data is not None
    # position is each pulled row's place in the table (checked on age)
    values = con.execute(f"SELECT age, {SENSITIVE} FROM adult").fetchall()
    age = np.array([v[0] for v in values], dtype=np.float64)[data.position]
    assert (age == data.columns[data.names.index("age")]).all()
    column = np.array([v[1] for v in values], dtype=object)[data.position]
    names, codes, counts = np.unique(column, return_inverse=True, return_counts=True)
    assert len(names) > 1
    codes = codes.reshape(-1).astype(np.int32)
    sens = Sensitive((SENSITIVE,), (codes,), (counts.astype(np.int64),), (False,))
    return dataclasses.replace(data, sensitive=sens)


def measure(data: QIData, algorithm: str, rule: Rule) -> dict[str, object]:
    """One run: its figures, or the error a run over budget ends with."""
    start = time.perf_counter()
    try:
        run = registry.get(algorithm).run(data, K, ClusterOptions(rule=rule))
    except InputError as error:
        return {"error": str(error), "seconds": round(time.perf_counter() - start, 2)}
    seconds = time.perf_counter() - start
    labels = run.labels
    kept = labels[labels >= 0]
    assert (np.bincount(kept) >= K).all()
    if rule.active:
        assert data.sensitive is not None and rule.classes_ok(labels, data.sensitive).all()
    return {
        "ncp_percent": round(100 * total_ncp(data, labels), 2),
        "suppressed": int((labels < 0).sum()),
        "classes": int(kept.max()) + 1 if len(kept) else 0,
        "seconds": round(seconds, 2),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=None, help="only the first N clean rows of Adult")
    args = parser.parse_args(argv)
    data = adult(args.rows)
    # compile k-member's kernels before anything is timed
    warm = data.take(np.arange(min(200, data.n_rows)))
    for rule in RULES.values():
        registry.get("kmember").run(warm, K, ClusterOptions(rule=rule, max_suppression=1.0))
    lines = [
        f"Adult, {data.n_rows:,} rows, QIs {', '.join(QIS)}; {SENSITIVE} sensitive; k = {K}, "
        "suppression budget 1 %; total NCP in %, a suppressed row costing 1 on every QI.",
        "",
        "| algorithm | criterion | total NCP (%) | suppressed rows | classes | seconds |",
        "|---|---|---:|---:|---:|---:|",
    ]
    runs = []
    for algorithm in ALGORITHMS:
        for label, rule in RULES.items():
            figures = measure(data, algorithm, rule)
            runs.append({"algorithm": algorithm, "criterion": label, **figures})
            if "error" in figures:
                line = f"| {algorithm} | {label} | over budget | | | {figures['seconds']} |"
            else:
                line = (
                    f"| {algorithm} | {label} | {figures['ncp_percent']:.2f} | {figures['suppressed']:,} "
                    f"| {figures['classes']:,} | {figures['seconds']:.2f} |"
                )
            print(line, flush=True)
            lines.append(line)
    name = "criteria_baselines" if args.rows is None else f"criteria_baselines_{args.rows}"
    record.write(name, {"rows": data.n_rows, "k": K, "qis": QIS, "sensitive": SENSITIVE, "runs": runs})
    (record.RESULTS / f"{name}.md").write_text("\n".join(lines) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
