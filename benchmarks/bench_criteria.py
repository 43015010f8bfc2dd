"""Criteria benchmark: the default SBCA keeping l-diversity, t-closeness and beta-likeness.

On Adult (30,162 clean rows) with occupation sensitive and QIs age, workclass, education,
marital-status, race, sex, native-country, for k in 5, 10, 25: total NCP (the numpy twin of
the SQL NCP; a suppressed row costs 1 on every QI), suppressed rows and seconds of the
clustering, for k alone and for each criterion, beside ARX 3.9's published figures on the same
setting. With --rows N it also times N synthetic rows (benchmarks/datasets.py's population)
at k = 10, k alone against distinct 3-diversity on its diagnosis. Writes
benchmarks/results/criteria.md.

    python benchmarks/bench_criteria.py
    python benchmarks/bench_criteria.py --rows 1000000
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import duckdb
import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
# the installed sbc_sql first (its kernels are compiled at install); else the checkout
sys.path.append(str(Path(__file__).resolve().parents[1]))

import datasets

from sbc_sql import engines
from sbc_sql.cluster.model import QIData
from sbc_sql.cluster.ncp import total_ncp
from sbc_sql.cluster.registry import ClusterOptions, get
from sbc_sql.cluster.sbca_plus import compiled
from sbc_sql.cluster.sensitive import Rule, Sensitive
from sbc_sql.privacy.criteria import rule_of
from sbc_sql.run import make_options
from sbc_sql.run.prepare import prepare

RESULTS = Path(__file__).resolve().parent / "results"
KS = (5, 10, 25)
QIS = ("age", "workclass", "education", "marital_status", "race", "sex", "native_country")
SENSITIVE = "occupation"
RULES = (
    ("k alone", Rule()),
    ("distinct l = 3", rule_of(l_diversity=3)),
    ("t = 0.2", rule_of(t_closeness=0.2)),
    ("enhanced beta = 1", rule_of(beta_likeness=1.0)),
    ("enhanced beta = 2", rule_of(beta_likeness=2.0)),
)
#: ARX 3.9 on the same setting: NCP % at k = 5, 10, 25 (None: one figure for every k)
ARX = {
    "distinct l = 3": "2.35 / 3.63 / 6.24 (0 suppressed)",
    "t = 0.2": "43.7",
    "enhanced beta = 1": "41.8 (14-23 % of rows suppressed)",
    "enhanced beta = 2": "25.5 (14-23 % of rows suppressed)",
}


def with_sensitive(con: duckdb.DuckDBPyConnection, table: str, data: QIData, column: str) -> QIData:
    """``data`` with ``column`` as its sensitive codes (values in order), matched by row id."""
    rows = con.execute(f'SELECT rowid, "{column}" FROM "{table}"').fetchall()
    by_id = {int(r): v for r, v in rows}
    values = [by_id[int(p)] for p in data.position]
    domain = sorted(set(values))
    code = {v: i for i, v in enumerate(domain)}
    codes = np.array([code[v] for v in values], dtype=np.int32)
    sens = Sensitive((column,), (codes,), (np.bincount(codes, minlength=len(domain)),), (False,))
    return QIData(
        data.names,
        data.numeric,
        data.columns,
        data.lo,
        data.hi,
        data.cardinality,
        data.weights,
        data.position,
        sensitive=sens,
    )


def run(data: QIData, k: int, rule: Rule, mode: str = "auto") -> tuple[float, int, float]:
    """Total NCP %, suppressed rows and seconds of one clustering."""
    t = time.perf_counter()
    labels = get("sbca").run(data, k, ClusterOptions(mode=mode, rule=rule)).labels
    seconds = time.perf_counter() - t
    if rule.active:
        assert data.sensitive is not None
        good = rule.classes_ok(labels, data.sensitive)
        used = np.unique(labels[labels >= 0])
        assert good[used].all(), "a class breaks the criteria"
    assert np.bincount(labels[labels >= 0]).max(initial=k) >= k
    return 100 * total_ncp(data, labels), int((labels < 0).sum()), seconds


def adult(mode: str) -> list[str]:
    con = duckdb.connect()
    datasets.load_adult(con, "adult", columns=[*QIS, SENSITIVE])
    # the rows, one by one, as a run with criteria clusters them
    options = make_options(5, qi=",".join(QIS), sensitive=SENSITIVE, tuples=False)
    data = prepare(engines.connect(con), "adult", options).data
    data = with_sensitive(con, "adult", data, SENSITIVE)
    run(data, 5, rule_of(l_diversity=3), mode)  # the kernels' first call loads them
    lines = [
        f"### Adult, {data.n_rows:,} rows, occupation sensitive, mode {mode}",
        "",
        "| criterion | k | NCP % | suppressed rows | seconds | ARX 3.9 NCP % |",
        "|---|---:|---:|---:|---:|---|",
    ]
    for name, rule in RULES:
        for k in KS:
            ncp, suppressed, seconds = run(data, k, rule, mode)
            lines.append(f"| {name} | {k} | {ncp:.2f} | {suppressed} | {seconds:.2f} | {ARX.get(name, '')} |")
            print(lines[-1], flush=True)
    return lines


def synthetic(rows: int) -> list[str]:
    con = duckdb.connect()
    datasets.make_synthetic(con, "people", rows)
    qis = datasets.SYNTH_QIS
    sensitive = datasets.SYNTH_SENSITIVE
    options = make_options(
        10, qi=",".join(qis), sensitive=sensitive, drop=datasets.SYNTH_IDENTIFIER, tuples=False
    )
    data = prepare(engines.connect(con), "people", options).data
    data = with_sensitive(con, "people", data, sensitive)
    lines = [
        f"### {rows:,} synthetic rows, QIs {', '.join(qis)}, {sensitive} sensitive, k = 10",
        "",
        "| criterion | NCP % | suppressed rows | seconds |",
        "|---|---:|---:|---:|",
    ]
    for name, rule in RULES[:2]:
        ncp, suppressed, seconds = run(data, 10, rule)
        lines.append(f"| {name} | {ncp:.2f} | {suppressed} | {seconds:.2f} |")
        print(lines[-1], flush=True)
    return lines


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=0, help="also time this many synthetic rows")
    parser.add_argument("--modes", default="auto,blocks,exact", help="modes run on Adult")
    args = parser.parse_args()
    lines = [
        "# The default SBCA keeping privacy criteria",
        "",
        f"Written by benchmarks/bench_criteria.py; {compiled.engine()} kernels. NCP is the total",
        "NCP of the release (a suppressed row costs 1 on every QI); at most 1 % of rows may be",
        "suppressed (--max-suppression 0.01). Every class is checked against the criteria.",
        "",
    ]
    for mode in args.modes.split(","):
        lines += adult(mode) + [""]
    if args.rows:
        lines += synthetic(args.rows) + [""]
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "criteria.md").write_text("\n".join(lines), encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
