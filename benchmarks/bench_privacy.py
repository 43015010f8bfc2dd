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
    python benchmarks/bench_privacy.py --scale 1000000       # k alone against l = 3 at 1M rows
    python benchmarks/bench_privacy.py --setting b           # setting B, about 40 minutes

Setting B, the background-knowledge experiment: 10 seeded samples of 4,000 clean Adult
rows, QIs age, sex, education, occupation sensitive, naive-Bayes background knowledge; kinc,
kagg, beta-ge and the default with the same beta and J, over three grids: k in {3, 5, 10,
15, 20} at J = 0.8, beta = 3; J in {0.1, ..., 0.8} at k = 5, beta = 3; beta in {1, ..., 6}
at J = 0.8, k = 5. Per run GCP / (n d) charging removed rows nothing, RGCP / (n d) (k_R = 2,
n_R = 4), record linkage RL (% of n), removed rows, the smallest and mean class; mean and
standard deviation over the samples. Rows removed by these algorithms may reach a quarter of
a sample, so the suppression budget is 0.5 there.

The scale run: the synthetic population of benchmarks/datasets.py (8 QIs, diagnosis
sensitive), the default at k = 10 alone and with distinct l = 3, each through the whole
pipeline in a fresh database (the table made once, then copied), time, peak memory and NCP.
"""

from __future__ import annotations

import argparse
import resource
import subprocess
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


B_ALGORITHMS = ("kinc", "kagg", "beta-ge", "sbca")
B_GRIDS: dict[str, list[tuple[int, float, float]]] = {
    # (k, J, beta)
    "k": [(k, 0.8, 3.0) for k in (3, 5, 10, 15, 20)],
    "J": [(5, j / 10, 3.0) for j in range(1, 9)],
    "beta": [(5, 0.8, float(b)) for b in range(1, 7)],
}
B_FIGURES = ("gcp", "rgcp", "rl", "removed", "smallest", "mean")


def run_b(samples: int, rows: int) -> list[dict[str, Any]]:
    import bench_background

    from sbc_sql.quality.evaluate import evaluate

    settings = sorted({s for grid in B_GRIDS.values() for s in grid})
    runs: list[dict[str, Any]] = []
    for seed in range(samples):
        con = duckdb.connect()
        con.execute("SET enable_progress_bar = false")
        bench_background.sample(con, seed, rows)
        for k, j, beta in settings:
            for algorithm in B_ALGORITHMS:
                started = time.perf_counter()
                base = {"sample": seed, "algorithm": algorithm, "k": k, "J": j, "beta": beta}
                try:
                    sbc_sql.anonymize(
                        con,
                        "t",
                        k,
                        output="r",
                        replace=True,
                        algorithm=algorithm,
                        beta_likeness=beta,
                        bk_threshold=j,
                        max_suppression=0.5,
                    )
                except sbc_sql.InputError as err:
                    runs.append({**base, "error": str(err)})
                    print(
                        f"  sample {seed} {algorithm:<8} k={k:>2} J={j:.1f} beta={beta:g}: {err}", flush=True
                    )
                    continue
                seconds = time.perf_counter() - started
                e = evaluate(con, "t", "r", sensitive="occupation", queries=0)
                run = {
                    **base,
                    "gcp": e.gcp_released,
                    "rgcp": e.rgcp,
                    "rl": 100 * e.record_linkage_share,
                    "removed": e.suppressed,
                    "smallest": e.smallest_class,
                    "mean": e.mean_class,
                    "seconds": seconds,
                }
                runs.append(run)
                print(
                    f"  sample {seed} {algorithm:<8} k={k:>2} J={j:.1f} beta={beta:g}  GCP {run['gcp']:.3f}  "
                    f"RGCP {run['rgcp']:.3f}  RL {run['rl']:.2f} %  removed {run['removed']:>5}  "
                    f"{seconds:5.2f} s",
                    flush=True,
                )
        con.close()
    return runs


def table_b(fig: dict[str, Any]) -> str:
    """Setting B as markdown: per grid, a row per (setting, algorithm), mean +- sd over the
    samples of each figure; then where the paper's orderings hold."""
    import statistics

    runs = [r for r in fig["runs"] if "error" not in r]
    out: list[str] = []
    holds = {"gcp": [0, 0], "rl": [0, 0], "removed": [0, 0], "small": [0, 0]}
    for grid, settings in B_GRIDS.items():
        out.append(f"\n**Grid {grid}** ({fig['samples']} samples of {fig['rows']:,} rows)\n")
        out.append("| k | J | beta | algorithm | GCP/nd | RGCP/nd | RL % | removed | smallest | mean class |")
        out.append("|---:|---:|---:|---|---|---|---|---|---|---|")
        for k, j, beta in settings:
            means: dict[str, dict[str, float]] = {}
            for algorithm in B_ALGORITHMS:
                mine = [
                    r for r in runs if (r["algorithm"], r["k"], r["J"], r["beta"]) == (algorithm, k, j, beta)
                ]
                failed = sum(
                    1
                    for r in fig["runs"]
                    if "error" in r and (r["algorithm"], r["k"], r["J"], r["beta"]) == (algorithm, k, j, beta)
                )
                if not mine:
                    out.append(
                        f"| {k} | {j:.1f} | {beta:g} | {algorithm} | refused in {failed} "
                        "sample(s) | | | | | |"
                    )
                    continue
                cells = []
                means[algorithm] = {}
                for f in B_FIGURES:
                    values = [float(r[f]) for r in mine]
                    mu = statistics.fmean(values)
                    sd = statistics.pstdev(values) if len(values) > 1 else 0.0
                    means[algorithm][f] = mu
                    cells.append(f"{mu:.3f} ± {sd:.3f}" if f in ("gcp", "rgcp") else f"{mu:.2f} ± {sd:.2f}")
                note = f" ({failed} refused)" if failed else ""
                out.append(f"| {k} | {j:.1f} | {beta:g} | {algorithm}{note} | " + " | ".join(cells) + " |")
            if grid != "k" and (k, j, beta) == (5, 0.8, 3.0):
                continue  # counted once, in the k grid
            if all(a in means for a in ("kinc", "kagg", "beta-ge")):
                m = means
                holds["gcp"][0] += m["kinc"]["gcp"] < m["kagg"]["gcp"] < m["beta-ge"]["gcp"]
                holds["rl"][0] += m["beta-ge"]["rl"] <= min(m["kinc"]["rl"], m["kagg"]["rl"])
                holds["removed"][0] += m["beta-ge"]["removed"] <= min(
                    m["kinc"]["removed"], m["kagg"]["removed"]
                )
                holds["small"][0] += (
                    max(m[a]["removed"] for a in ("kinc", "kagg", "beta-ge")) <= 0.003 * fig["rows"]
                )
                for key in holds:
                    holds[key][1] += 1
    out.append("")
    out.append(
        "Where the paper's orderings hold (settings, means over the samples): "
        f"GCP kinc < kagg < beta-ge in {holds['gcp'][0]} of {holds['gcp'][1]}; beta-ge lowest RL in "
        f"{holds['rl'][0]} of {holds['rl'][1]}; beta-ge fewest removals in {holds['removed'][0]} of "
        f"{holds['removed'][1]}; every algorithm removing at most 0.3 % of rows in {holds['small'][0]} of "
        f"{holds['small'][1]}."
    )
    return "\n".join(out)


def scale_once(path: str, kw: dict[str, Any]) -> dict[str, Any]:
    """One anonymize of the synthetic table in ``path`` (in this process): seconds, NCP,
    the stages' seconds."""
    con = duckdb.connect(path)
    con.execute("SET enable_progress_bar = false")
    started = time.perf_counter()
    result = sbc_sql.anonymize(con, "synthetic", 10, output="r", replace=True, **kw)
    seconds = time.perf_counter() - started
    m = result.measures
    assert m is not None
    out = {
        "seconds": seconds,
        "ncp": m.total_ncp,
        "suppressed": m.suppressed,
        "classes": m.classes,
        "stages": result.timings,
        "achieved": result.achieved,
        "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
    }
    con.close()
    return out


def run_scale(rows: int, repeats: int) -> dict[str, Any]:
    """k = 10 alone and with l = 3 on ``rows`` synthetic rows, each run in its own process
    (peak memory is the process's), alternating, ``repeats`` times."""
    import json
    import tempfile

    folder = tempfile.mkdtemp(prefix="sbc-privacy-")
    path = str(Path(folder) / "synthetic.duckdb")
    con = duckdb.connect(path)
    datasets.make_synthetic(con, "synthetic", rows)
    con.close()
    out: dict[str, list[dict[str, Any]]] = {"k": [], "l3": []}
    for _ in range(repeats):
        for key, kw in (("k", {}), ("l3", {"l_diversity": 3})):
            code = (
                "import json, sys; sys.path.insert(0, 'benchmarks'); import bench_privacy as b; "
                f"print(json.dumps(b.scale_once({path!r}, {kw!r})))"
            )
            done = subprocess.run(
                [sys.executable, "-c", code],
                capture_output=True,
                text=True,
                check=True,
                cwd=Path(__file__).parents[1],
            )
            run = json.loads(done.stdout.strip().splitlines()[-1])
            out[key].append(run)
            what = "k=10 alone" if key == "k" else "k=10, l=3"
            print(
                f"  {rows:,} rows, {what:<11} {run['seconds']:6.2f} s  NCP {100 * run['ncp']:.2f} %  "
                f"peak {run['peak_rss_mb']:,.0f} MB  suppressed {run['suppressed']}",
                flush=True,
            )
    return {"rows": rows, **out}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--algorithms", default=None, help="comma-separated (default: all that keep criteria)"
    )
    parser.add_argument("--k", default=",".join(map(str, KS)), help="comma-separated ks")
    parser.add_argument("--scale", type=int, default=None, help="rows of the scale run (alone)")
    parser.add_argument("--repeats", type=int, default=3, help="runs of each in the scale run")
    parser.add_argument("--setting", choices=("a", "b"), default="a", help="the setting to run")
    parser.add_argument("--samples", type=int, default=10, help="setting B: samples")
    parser.add_argument("--rows", type=int, default=4000, help="setting B: rows per sample")
    args = parser.parse_args(argv)
    if args.setting == "b":
        started = time.perf_counter()
        fig_b = {"samples": args.samples, "rows": args.rows, "runs": run_b(args.samples, args.rows)}
        record.write("privacy_b", {**fig_b, "seconds": time.perf_counter() - started})
        text_b = table_b(fig_b)
        (record.RESULTS / "privacy_b.md").write_text("# Privacy benchmark, setting B\n" + text_b + "\n")
        print(text_b)
        return 0
    if args.scale:
        fig = run_scale(args.scale, args.repeats)
        record.write("privacy_scale", fig)
        med = {key: sorted(r["seconds"] for r in fig[key])[len(fig[key]) // 2] for key in ("k", "l3")}
        print(f"median: k alone {med['k']:.2f} s, l = 3 {med['l3']:.2f} s, ratio {med['l3'] / med['k']:.2f}")
        return 0
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
