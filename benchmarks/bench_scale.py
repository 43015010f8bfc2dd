"""Scale benchmark: end-to-end anonymize on synthetic populations and on Adult.

For each input it prints, in one run: per-stage seconds, peak memory, total NCP, and the
ratio of the end-to-end time to a plain DuckDB ``GROUP BY`` over all QIs of the same table
(the floor set by the database itself). Results go to benchmarks/results/scale.md and
scale.json (scale_utility.md and .json with --utility), from which report.py renders README's
tables. A run of some sizes only (--rows, --no-adult) replaces those inputs in scale.json and
keeps the others.

    python benchmarks/bench_scale.py                    # Adult + 1M + 10M
    python benchmarks/bench_scale.py --rows 1000000     # synthetic sizes only
    python benchmarks/bench_scale.py --utility          # blocks vs exact NCP at 30k / 200k
    SBC_BENCH_MEMORY=20GB python benchmarks/bench_scale.py   # another DuckDB memory cap
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import duckdb

sys.path.insert(0, str(Path(__file__).resolve().parent))
# the installed sbc_sql first (its kernels are compiled at install); else the checkout
sys.path.append(str(Path(__file__).resolve().parents[1]))

import datasets
import record

import sbc_sql
from sbc_sql.cluster.sbca_plus import compiled

RESULTS = Path(__file__).resolve().parent / "results"
# DuckDB's memory cap for the synthetic runs (as `--memory-limit` does): its joins and sorts
# spill to disk beyond it, which keeps the 10M-row run under 4 GB of peak RSS
MEMORY_LIMIT = os.environ.get("SBC_BENCH_MEMORY", "3GB")
#: runs timed on Adult, in Python and as whole processes (the median is reported)
ADULT_RUNS = 5


def peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


def group_by_floor(con: duckdb.DuckDBPyConnection, table: str, qis: list[str]) -> float:
    cols = ", ".join(f'"{q}"' for q in qis)
    t = time.perf_counter()
    con.execute(f'SELECT COUNT(*) FROM (SELECT {cols}, COUNT(*) FROM "{table}" GROUP BY {cols})').fetchall()
    return time.perf_counter() - t


def anonymize_once(
    con, table: str, qis: list[str], sensitive: str, k: int, drop: list[str], mode: str = "auto"
) -> dict[str, object]:
    t = time.perf_counter()
    result = sbc_sql.anonymize(
        con,
        table,
        k,
        qi=qis,
        sensitive=[sensitive],
        drop=drop,
        output=f"{table}_k{k}",
        replace=True,
        mode=mode,
    )
    seconds = time.perf_counter() - t
    assert result.verdict is not None and result.verdict.ok and result.measures is not None
    return {
        "seconds": seconds,
        "ncp": result.measures.total_ncp,
        "mode": result.mode,
        "stages": dict(result.timings),
        "classes": result.measures.classes,
    }


def measured(label: str, rows: int, k: int, r: dict[str, object], floor: float) -> dict[str, object]:
    """One input's figures as scale.json holds them."""
    return {
        "input": label,
        "rows": rows,
        "k": k,
        "mode": r["mode"],
        "seconds": r["seconds"],
        "peak_rss_mb": peak_rss_mb(),
        "ncp": r["ncp"],
        "group_by_seconds": floor,
        "stages": r["stages"],
        "date": record.environment()["date"],
        "load_average": record.environment()["load_average"],
    }


def line(m: dict[str, object]) -> str:
    """One row of the scale table (report.py renders README's from the same figures)."""
    stages = ", ".join(f"{s} {v:.2f}" for s, v in m["stages"].items())  # type: ignore[attr-defined]
    return (
        f"| {m['input']} | {m['rows']:,} | {m['k']} | {m['mode']} | {m['seconds']:.2f} | "
        f"{m['peak_rss_mb']:.0f} | {100 * m['ncp']:.2f} % | {m['seconds'] / m['group_by_seconds']:.0f}x "
        f"({m['group_by_seconds']:.3f} s) | {stages} |"
    )


HEADER = (
    "| input | rows | k | mode | seconds | peak RSS MB | total NCP | vs GROUP BY | stages (s) |\n"
    "|---|---|---|---|---|---|---|---|---|"
)


def adult(k: int = 10) -> tuple[dict[str, object], str]:
    con = duckdb.connect()
    datasets.load_adult(con, "adult", columns=datasets.ADULT_QIS_8 + ["income"])
    anonymize_once(con, "adult", datasets.ADULT_QIS_8, "income", k, [])  # compile/cache warm-up
    runs = sorted(
        (anonymize_once(con, "adult", datasets.ADULT_QIS_8, "income", k, []) for _ in range(ADULT_RUNS)),
        key=lambda r: r["seconds"],
    )
    r = runs[len(runs) // 2]
    floor = group_by_floor(con, "adult", datasets.ADULT_QIS_8)
    out = measured("Adult (in Python)", 30162, k, r, floor)
    out["runs_seconds"] = [run["seconds"] for run in runs]
    with tempfile.TemporaryDirectory() as tmp:
        cmd = adult_command(adult_file(Path(tmp) / "adult.duckdb"), k)
        # the same sbc_sql as this process imported, run from outside the checkout
        env = dict(os.environ, PYTHONPATH=str(Path(sbc_sql.__file__).parents[1]))
        times = process_times(cmd, env, tmp)
        # the baseline: the same processes on numba's JIT (its import and cache loading)
        jit = process_times(cmd, dict(env, SBC_SQL_KERNELS="jit"), tmp)
    note = (
        f"Adult in Python: median of {ADULT_RUNS} runs, {runs[0]['seconds']:.2f}-"
        f"{runs[-1]['seconds']:.2f} s.\n"
        f"Whole `sbc-sql anonymize` process on Adult, k = {k}: {times[len(times) // 2]:.2f} s "
        f"(median of {ADULT_RUNS}; {times[0]:.2f}-{times[-1]:.2f} s). Kernels: "
        f"{compiled.engine()}; with numba's JIT instead (SBC_SQL_KERNELS=jit) "
        f"{jit[len(jit) // 2]:.2f} s ({jit[0]:.2f}-{jit[-1]:.2f} s)."
    )
    out["process_seconds"] = times
    out["process_kernels"] = compiled.engine()
    out["process_jit_seconds"] = jit
    print(line(out) + "\n" + note, flush=True)
    return out, note


def adult_file(path: Path) -> Path:
    """A DuckDB file at ``path`` holding Adult's clean rows as the table adult: its 8 QIs
    and income."""
    with duckdb.connect(str(path)) as con:
        datasets.load_adult(con, "adult", columns=datasets.ADULT_QIS_8 + ["income"])
    return path


def adult_command(path: Path, k: int) -> list[str]:
    """The whole ``sbc-sql anonymize`` process on the Adult file at ``path`` (income
    sensitive, the release replaced from run to run)."""
    db = ["--db", str(path), "--table", "adult", "--k", str(k)]
    return [sys.executable, "-m", "sbc_sql", "anonymize", *db, "--sensitive", "income", "--replace"]


def process_times(cmd: list[str], env: dict[str, str], cwd: str, runs: int = ADULT_RUNS) -> list[float]:
    """Seconds of ``runs`` runs of ``cmd`` (each a whole process), sorted."""
    times = []
    for _ in range(runs):
        t = time.perf_counter()
        subprocess.run(cmd, check=True, capture_output=True, env=env, cwd=cwd)
        times.append(time.perf_counter() - t)
    return sorted(times)


def synthetic(rows: int, k: int = 10, workers: int | None = None) -> dict[str, object]:
    with tempfile.TemporaryDirectory() as tmp:
        con = duckdb.connect(str(Path(tmp) / "synth.duckdb"))
        con.execute(f"SET memory_limit = '{MEMORY_LIMIT}'")
        t = time.perf_counter()
        datasets.make_synthetic(con, "people", rows)
        made = time.perf_counter() - t
        floor = group_by_floor(con, "people", datasets.SYNTH_QIS)
        r = anonymize_once(
            con, "people", datasets.SYNTH_QIS, datasets.SYNTH_SENSITIVE, k, [datasets.SYNTH_IDENTIFIER]
        )
        con.close()
    out = measured("synthetic", rows, k, r, floor)
    print(f"(table made in {made:.1f} s)", file=sys.stderr, flush=True)
    return out


def utility() -> tuple[str, list[dict[str, object]]]:
    lines = ["| input | k | exact NCP | blocks NCP | blocks / exact |", "|---|---|---|---|---|"]
    figures: list[dict[str, object]] = []
    inputs = []
    con = duckdb.connect()
    datasets.load_adult(con, "adult", columns=datasets.ADULT_QIS_8 + ["income"])
    inputs.append(("Adult 30,162", con, "adult", datasets.ADULT_QIS_8, "income", []))
    con2 = duckdb.connect()
    datasets.make_synthetic(con2, "people", 200_000)
    inputs.append(
        (
            "synthetic 200,000",
            con2,
            "people",
            datasets.SYNTH_QIS,
            datasets.SYNTH_SENSITIVE,
            [datasets.SYNTH_IDENTIFIER],
        )
    )
    for label, c, table, qis, sens, drop in inputs:
        for k in (5, 10, 50):
            e = anonymize_once(c, table, qis, sens, k, drop, mode="exact")
            b = anonymize_once(c, table, qis, sens, k, drop, mode="blocks")
            row = (
                f"| {label} | {k} | {100 * e['ncp']:.2f} % ({e['seconds']:.1f} s) | "
                f"{100 * b['ncp']:.2f} % ({b['seconds']:.1f} s) | "
                f"{b['ncp'] / e['ncp']:.3f} |"
            )
            print(row, flush=True)
            lines.append(row)
            figures.append(
                {
                    "input": label,
                    "k": k,
                    "exact_ncp": e["ncp"],
                    "exact_seconds": e["seconds"],
                    "blocks_ncp": b["ncp"],
                    "blocks_seconds": b["seconds"],
                }
            )
    return "\n".join(lines), figures


def merged(inputs: list[dict[str, object]]) -> list[dict[str, object]]:
    """This run's inputs, and those of the previous scale.json that this run did not measure
    (keyed by input and rows), in the order Adult first, then by rows."""
    try:
        previous = record.read("scale")["runs"]
    except FileNotFoundError:
        previous = []
    done = {(m["input"], m["rows"]) for m in inputs}
    runs = [m for m in previous if (m["input"], m["rows"]) not in done] + inputs
    return sorted(runs, key=lambda m: (m["input"] != "Adult (in Python)", m["rows"]))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", default="1000000,10000000", help="comma-separated synthetic sizes")
    parser.add_argument("--k", type=int, default=10)
    parser.add_argument("--no-adult", action="store_true")
    parser.add_argument("--one", type=int, default=0, help=argparse.SUPPRESS)
    parser.add_argument(
        "--utility", action="store_true", help="only compare block mode's NCP with exact SBCA's"
    )
    args = parser.parse_args(argv)
    RESULTS.mkdir(exist_ok=True)
    if args.utility:
        text, figures = utility()
        (RESULTS / "scale_utility.md").write_text(text + "\n")
        record.write("scale_utility", {"runs": figures})
        print(text)
        return 0
    if args.one:
        print("ROW " + json.dumps(synthetic(args.one, args.k)), flush=True)
        return 0
    parts = [HEADER]
    notes = []
    inputs = []
    if not args.no_adult:
        print(HEADER, flush=True)
        row, note = adult(args.k)
        inputs.append(row)
        parts.append(line(row))
        notes.append(note)
    for n in (int(x) for x in args.rows.split(",") if x):
        # each size in a process of its own, so its peak memory is its own
        done = subprocess.run(
            [sys.executable, __file__, "--one", str(n), "--k", str(args.k)],
            check=True,
            capture_output=True,
            text=True,
        )
        (row,) = [json.loads(out[4:]) for out in done.stdout.splitlines() if out.startswith("ROW ")]
        inputs.append(row)
        parts.append(line(row))
        print(parts[-1], flush=True)
    notes.append(f"Synthetic runs cap DuckDB at memory_limit = {MEMORY_LIMIT} (`--memory-limit`).")
    text = "\n".join(parts) + "\n\n" + "\n".join(notes) + "\n"
    (RESULTS / "scale.md").write_text(text)
    record.write("scale", {"memory_limit": MEMORY_LIMIT, "runs": merged(inputs)})
    print(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
