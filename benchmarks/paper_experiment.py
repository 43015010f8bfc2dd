"""The SBC paper's experiment (the paper's evaluation on Adult), reproducible from a fresh checkout.

Setting A (the paper's): Adult, first 5,000 clean rows; QIs age, sex, native-country;
income sensitive; k in {2, 5, 10, 20, ..., 100}; Datafly and Incognito with the paper's
age hierarchy and value -> * for sex and native-country.
Setting B (the field's common one): all 30,162 clean rows; 8 QIs; k in {2, 5, 10, 25, 50, 100};
Datafly and Incognito with the default hierarchies.

Writes CSV, JSON (``setting_<X>.json``, from which report.py renders the tables of
docs/metrics.md and benchmarks/README.md), a
markdown table and an NCP-vs-k plot per setting under benchmarks/results/.

    python benchmarks/paper_experiment.py [--settings A,B] [--algorithms sbca,mondrian,...]
"""

from __future__ import annotations

import argparse
import dataclasses
import resource
import sys
import time
from pathlib import Path

import duckdb

sys.path.insert(0, str(Path(__file__).resolve().parent))
# the installed sbc_sql first (its kernels are compiled at install); else the checkout
sys.path.append(str(Path(__file__).resolve().parents[1]))

import datasets
import record

from sbc_sql import compare as cmp
from sbc_sql.cluster.baselines.fulldomain import Hierarchy, numeric_hierarchy, paper_age_levels

RESULTS = Path(__file__).resolve().parent / "results"
ALGORITHMS = ["sbca", "sbca-paper", "mondrian", "datafly", "incognito", "kmember"]
SETTINGS = {
    "A": {
        "rows": 5000,
        "qis": datasets.ADULT_QIS_PAPER,
        "ks": [2, 5, 10, 20, 30, 40, 50, 60, 70, 80, 90, 100],
    },
    "B": {"rows": None, "qis": datasets.ADULT_QIS_8, "ks": [2, 5, 10, 25, 50, 100]},
}


def paper_age(con: duckdb.DuckDBPyConnection, table: str) -> Hierarchy:
    """The paper's age hierarchy over the ages present in the table."""
    import numpy as np

    ages = np.array(
        [
            r[0]
            for r in con.execute(
                f'SELECT DISTINCT age FROM "{table}" WHERE age IS NOT NULL ORDER BY age'
            ).fetchall()
        ],
        dtype=np.float64,
    )
    return numeric_hierarchy(ages, paper_age_levels())


def markdown(rows: list[cmp.CompareRow], algorithms: list[str]) -> str:
    ks = sorted({r.k for r in rows})
    by = {(r.algorithm, r.k): r for r in rows}
    head = "| algorithm | " + " | ".join(f"k={k}" for k in ks) + " |"
    lines = [head, "|---|" + "---|" * len(ks)]
    for a in algorithms:
        cells = [f"{100 * by[(a, k)].ncp:.2f} %" if (a, k) in by else "—" for k in ks]
        lines.append(f"| {a} | " + " | ".join(cells) + " |")
    lines += [
        "",
        "Distinct generalized tuples (suppressed rows in brackets):",
        "",
        head,
        "|---|" + "---|" * len(ks),
    ]
    for a in algorithms:
        cells = [f"{by[(a, k)].tuples} ({by[(a, k)].suppressed})" if (a, k) in by else "—" for k in ks]
        lines.append(f"| {a} | " + " | ".join(cells) + " |")
    lines += [
        "",
        "Seconds per run (whole anonymize: stats, pull, cluster, write, verify, measure):",
        "",
        head,
        "|---|" + "---|" * len(ks),
    ]
    for a in algorithms:
        cells = [f"{by[(a, k)].seconds:.2f}" if (a, k) in by else "—" for k in ks]
        lines.append(f"| {a} | " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def run_setting(name: str, algorithms: list[str]) -> list[cmp.CompareRow]:
    cfg = SETTINGS[name]
    con = duckdb.connect()
    table = f"adult_{name.lower()}"
    datasets.load_adult(con, table, rows=cfg["rows"], columns=cfg["qis"] + ["income"])
    hierarchies = {"age": paper_age(con, table)} if name == "A" else {}
    started = time.perf_counter()

    def show(r: cmp.CompareRow) -> None:
        print(
            f"{name}  {r.algorithm:<10} k={r.k:>3}  NCP {100 * r.ncp:6.2f} %  tuples "
            f"{r.tuples:>5}  suppressed {r.suppressed:>4}  {r.seconds:6.2f} s",
            flush=True,
        )

    rows = cmp.compare(
        con,
        table,
        cfg["ks"],
        algorithms,
        qi=cfg["qis"],
        sensitive=["income"],
        hierarchies=hierarchies,
        on_row=show,
    )
    total = time.perf_counter() - started
    RESULTS.mkdir(exist_ok=True)
    stem = RESULTS / f"setting_{name}"
    cmp.write_csv(rows, f"{stem}.csv")
    title = "Adult 5,000 x (age, sex, native-country)" if name == "A" else "Adult 30,162 x 8 QIs"
    cmp.plot(rows, f"{stem}.png", title=f"{title}: total NCP against k")
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    text = (
        f"Setting {name}: {title}. Total NCP (lower is better); every release verified "
        f"k-anonymous. Whole setting: {total:.1f} s, peak RSS {peak:.0f} MB.\n\n" + markdown(rows, algorithms)
    )
    Path(f"{stem}.md").write_text(text)
    record.write(
        f"setting_{name}",
        {
            "setting": name,
            "title": title,
            "rows": cfg["rows"],
            "qis": cfg["qis"],
            "ks": cfg["ks"],
            "algorithms": algorithms,
            "seconds": total,
            "peak_rss_mb": peak,
            "runs": [dataclasses.asdict(r) for r in rows],
        },
    )
    print(text)
    return rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--settings", default="A,B")
    parser.add_argument("--algorithms", default=",".join(ALGORITHMS))
    args = parser.parse_args(argv)
    algorithms = [a for a in args.algorithms.split(",") if a]
    for name in args.settings.split(","):
        run_setting(name.strip().upper(), algorithms)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
