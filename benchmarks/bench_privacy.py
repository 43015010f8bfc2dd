"""Privacy benchmark: what l-diversity, t-closeness and beta-likeness cost, and whether every
release holds them.

Setting A, the field's: UCI Adult, all 30,162 clean rows, QIs age, workclass, education,
marital-status, race, sex, native-country, occupation sensitive (14 values). For k in
{5, 10, 25} and each of k only, l = 3, t = 0.2, beta = 1 and beta = 2: total NCP (a
suppressed row costs 1 on every QI), suppressed rows and seconds, for each algorithm that
keeps the criteria, every release through the full pipeline (verified in SQL before it is
counted) and checked again by pycanon (when installed) on its classes. Beside them, ARX
3.9.2's figures on the same setting (local recoding, its partition scored with the same
NCP), as published with the benchmark's task.

Writes benchmarks/results/privacy.json and privacy.md (report.py renders the benchmarks
README's table from the JSON).

    python benchmarks/bench_privacy.py                       # setting A, about 5 minutes
    python benchmarks/bench_privacy.py --algorithms sbca     # the default alone
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import duckdb

sys.path.insert(0, str(Path(__file__).resolve().parent))
# the installed sbc_sql first (its kernels are compiled at install); else the checkout
sys.path.append(str(Path(__file__).resolve().parents[1]))

import datasets
import record

import sbc_sql
from sbc_sql.cluster import registry

KS = (5, 10, 25)
QIS = ("age", "workclass", "education", "marital_status", "race", "sex", "native_country")
SENSITIVE = "occupation"
#: (key, label, keywords of anonymize)
CRITERIA: tuple[tuple[str, str, dict[str, Any]], ...] = (
    ("k", "k only", {}),
    ("l3", "l = 3", {"l_diversity": 3}),
    ("t0.2", "t = 0.2", {"t_closeness": 0.2}),
    ("beta1", "beta = 1", {"beta_likeness": 1.0}),
    ("beta2", "beta = 2", {"beta_likeness": 2.0}),
)
#: ARX 3.9.2 on setting A, total NCP (%) at k = 5, 10, 25 and the rows it suppressed
ARX: dict[str, dict[str, Any]] = {
    "k": {"ncp": (2.07, 3.56, 6.40), "suppressed": "0"},
    "l3": {"ncp": (2.35, 3.63, 6.24), "suppressed": "0"},
    "t0.2": {"ncp": (43.73, 43.74, 43.60), "suppressed": "15-16 % of rows (suppression left free)"},
    "beta1": {"ncp": (41.79, 42.81, 42.23), "suppressed": "18-23 % of rows (suppression left free)"},
    "beta2": {"ncp": (25.73, 24.96, 25.48), "suppressed": "14-17 % of rows (suppression left free)"},
}
ARX_LIMITED = {"t0.2": 82.65, "beta1": 92.90, "beta2": 85.48}


def adult() -> duckdb.DuckDBPyConnection:
    con = duckdb.connect()
    con.execute("SET enable_progress_bar = false")
    datasets.load_adult(con, "adult", columns=[*QIS, SENSITIVE])
    return con


def pycanon_check(con: duckdb.DuckDBPyConnection, release: str, original: str, kw: dict[str, Any]) -> str:
    """pycanon's figures for the release's classes (its eq_class as the one QI), or why
    there are none. pycanon takes a value's share p from the rows it is given: with
    suppressed rows it differs slightly from the input's, which the pipeline uses."""
    try:
        from pycanon import anonymity
    except ImportError:
        return "pycanon not installed"
    df = con.execute(f'SELECT eq_class, "{SENSITIVE}" FROM "{release}"').df()
    k = int(anonymity.k_anonymity(df, ["eq_class"]))
    out = [f"k {k}"]
    if "l_diversity" in kw:
        out.append(f"l {int(anonymity.l_diversity(df, ['eq_class'], [SENSITIVE]))}")
    if "t_closeness" in kw:
        out.append(f"t {float(anonymity.t_closeness(df, ['eq_class'], [SENSITIVE])):.4f}")
    if "beta_likeness" in kw:
        out.append(f"beta {float(anonymity.basic_beta_likeness(df, ['eq_class'], [SENSITIVE])):.4f}")
    return ", ".join(out)


def run_a(algorithms: Sequence[str], ks: Sequence[int]) -> list[dict[str, Any]]:
    runs: list[dict[str, Any]] = []
    for algorithm in algorithms:
        for key, label, kw in CRITERIA:
            if kw and not registry.get(algorithm).criteria:
                continue
            for k in ks:
                con = adult()
                started = time.perf_counter()
                try:
                    result = sbc_sql.anonymize(
                        con, "adult", k, qi=QIS, sensitive=SENSITIVE, algorithm=algorithm, output="r", **kw
                    )
                except sbc_sql.InputError as err:
                    seconds = time.perf_counter() - started
                    print(f"  {algorithm:<10} {label:<9} k={k:>2}  refused: {err}", flush=True)
                    runs.append(
                        {
                            "algorithm": algorithm,
                            "criteria": key,
                            "k": k,
                            "error": str(err),
                            "seconds": seconds,
                        }
                    )
                    continue
                seconds = time.perf_counter() - started
                m = result.measures
                assert m is not None
                canon = pycanon_check(con, "r", "adult", kw)
                run = {
                    "algorithm": algorithm,
                    "criteria": key,
                    "k": k,
                    "ncp": m.total_ncp,
                    "suppressed": m.suppressed,
                    "suppressed_by": result.suppressed_by,
                    "classes": m.classes,
                    "achieved": result.achieved,
                    "pycanon": canon,
                    "seconds": seconds,
                }
                runs.append(run)
                print(
                    f"  {algorithm:<10} {label:<9} k={k:>2}  NCP {100 * m.total_ncp:6.2f} %  "
                    f"suppressed {m.suppressed:>4}  {seconds:6.2f} s  pycanon: {canon}",
                    flush=True,
                )
                con.close()
    return runs


def table_a(fig: dict[str, Any]) -> str:
    """Setting A as markdown: a row per (algorithm, criteria), NCP and suppressed rows per k,
    then ARX's row for the same criteria."""
    ks = fig["ks"]
    head = "| algorithm | criteria | " + " | ".join(f"k={k}" for k in ks) + " | suppressed rows |"
    lines = [head, "|---|---|" + "---:|" * len(ks) + "---|"]
    by = {(r["algorithm"], r["criteria"], r["k"]): r for r in fig["runs"]}
    for key, label, _ in CRITERIA:
        for algorithm in fig["algorithms"]:
            cells, supp = [], []
            for k in ks:
                r = by.get((algorithm, key, k))
                if r is None:
                    cells.append("—")
                elif "error" in r:
                    cells.append("refused")
                else:
                    cells.append(f"{100 * r['ncp']:.2f} %")
                    supp.append(r["suppressed"])
            if all(c == "—" for c in cells):
                continue
            shown = "/".join(f"{s:,}" for s in supp) if supp else "—"
            lines.append(f"| {algorithm} | {label} | " + " | ".join(cells) + f" | {shown} |")
        arx = dict(zip(KS, ARX[key]["ncp"], strict=True))
        cells = [f"{arx[k]:.2f} %" if k in arx else "—" for k in ks]
        lines.append(f"| ARX 3.9.2 | {label} | " + " | ".join(cells) + f" | {ARX[key]['suppressed']} |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--algorithms", default=None, help="comma-separated (default: all that keep criteria)"
    )
    parser.add_argument("--k", default=",".join(map(str, KS)), help="comma-separated ks")
    args = parser.parse_args(argv)
    algorithms = args.algorithms.split(",") if args.algorithms else ["sbca", "mondrian", "kmember"]
    ks = [int(k) for k in args.k.split(",")]
    started = time.perf_counter()
    print(f"Setting A: Adult, {len(QIS)} QIs, {SENSITIVE} sensitive; algorithms {', '.join(algorithms)}")
    runs = run_a(algorithms, ks)
    fig = {
        "setting_a": {"algorithms": algorithms, "ks": ks, "runs": runs},
        "seconds": time.perf_counter() - started,
    }
    record.write("privacy", fig)
    (record.RESULTS / "privacy.md").write_text(
        "# Privacy benchmark, setting A\n\n" + table_a(fig["setting_a"]) + "\n"
    )
    print(table_a(fig["setting_a"]))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
