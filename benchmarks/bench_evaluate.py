"""``evaluate`` and ``report`` at real sizes: the seeded clinic table of
``examples/make_clinic_db.py`` at 10,000 and 100,000 rows (1,000,000 with --million),
anonymized at k = 5, then evaluated and reported, each command a whole process: its wall
seconds, its peak memory (the process's maximum resident set) and the figures evaluate
prints (total NCP, RGCP, record linkage, query error), with anonymize's own seconds on the
same table in the same run as the baseline of the ratios.

    python benchmarks/bench_evaluate.py [--rows 10000 --rows 100000] [--million] [--curve-k none]

evaluate's steps (coverage and record linkage, RGCP, query error) are read from the lines
it prints. The default run takes a few minutes on a 2-core machine; --million adds about
ten. Prints a Markdown table and writes benchmarks/results/evaluate.md and evaluate.json.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
import record

ROOT = Path(__file__).resolve().parents[1]
K = 5
DEFAULT_ROWS = (10_000, 100_000)
MILLION = 1_000_000
STEP = re.compile(r"^evaluate: (.+) done in ([0-9.]+) s$")


def run(args: list[str]) -> tuple[float, float, str, str]:
    """Run one process of this checkout's sbc_sql (or a script): wall seconds, peak memory
    (MiB), stdout, stderr."""
    env = {**os.environ, "PYTHONPATH": str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", "")}
    with tempfile.TemporaryFile("w+") as out, tempfile.TemporaryFile("w+") as err:
        started = time.perf_counter()
        proc = subprocess.Popen([sys.executable, *args], stdout=out, stderr=err, env=env, text=True)
        _, status, usage = os.wait4(proc.pid, 0)
        seconds = time.perf_counter() - started
        proc.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        err.seek(0)
        stdout, stderr = out.read(), err.read()
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(args[:3])} failed ({proc.returncode}):\n{stderr}")
    return seconds, usage.ru_maxrss / 1024, stdout, stderr


def figures(doc: dict[str, Any]) -> dict[str, Any]:
    """The headline figures of an evaluate --json document."""
    loss, risk, queries = doc["information_loss"], doc["risk"], doc["query_accuracy"]
    return {
        "total_ncp": loss["total_ncp"]["value"],
        "rgcp": loss["rgcp"]["value"],
        "record_linkage_share": risk["record_linkage_share"]["value"],
        "classes": risk["classes"]["value"],
        "query_error": {s: q["relative_error"]["value"] for s, q in queries.items() if isinstance(q, dict)},
    }


def measure(rows: int, folder: Path, curve_k: str) -> dict[str, Any]:
    db = folder / f"clinic_{rows}.duckdb"
    run([str(ROOT / "examples" / "make_clinic_db.py"), "--rows", str(rows), "--out", str(db), "--replace"])
    base = ["-m", "sbc_sql"]
    a_s, a_mem, _, _ = run([*base, "anonymize", "--db", str(db), "-t", "patients", "-k", str(K), "-q"])
    e_s, e_mem, out, err = run(
        [
            *base,
            "evaluate",
            "--db",
            str(db),
            "--original",
            "patients",
            "--release",
            f"patients_k{K}",
            "--json",
        ]
    )
    steps = {m.group(1): float(m.group(2)) for line in err.splitlines() if (m := STEP.match(line))}
    html = folder / f"report_{rows}.html"
    r_s, r_mem, _, _ = run(
        [*base, "report", "--db", str(db), "--original", "patients", "--release", f"patients_k{K}"]
        + ["-o", str(html), "--replace", "--curve-k", curve_k, "-q"]
    )
    return {
        "rows": rows,
        "anonymize_s": round(a_s, 2),
        "anonymize_mib": round(a_mem),
        "evaluate_s": round(e_s, 2),
        "evaluate_mib": round(e_mem),
        "evaluate_steps_s": steps,
        "report_s": round(r_s, 2),
        "report_mib": round(r_mem),
        "curve_k": curve_k,
        **figures(json.loads(out)),
    }


def table(runs: list[dict[str, Any]]) -> str:
    head = (
        "| rows | anonymize s | evaluate s (x anonymize) | coverage s | query error s | evaluate MiB "
        "| report s (x anonymize) | report MiB | total NCP | RGCP | RL share | query error @0.05 |"
    )
    lines = [head, "|" + "---:|" * 12]
    for r in runs:
        steps = r["evaluate_steps_s"]
        query = next((v for k, v in steps.items() if k.startswith("query error")), None)
        coverage = steps.get("coverage and record linkage", 0.0)
        lines.append(
            f"| {r['rows']:,} | {r['anonymize_s']:.1f} | {r['evaluate_s']:.1f} "
            f"({r['evaluate_s'] / r['anonymize_s']:.1f}x) | {coverage:.1f} "
            f"| {query or 0:.1f} | {r['evaluate_mib']} | {r['report_s']:.1f} "
            f"({r['report_s'] / r['anonymize_s']:.1f}x) | {r['report_mib']} | {r['total_ncp']:.4f} "
            f"| {r['rgcp']:.4f} | {r['record_linkage_share']:.4f} | {r['query_error'].get('0.05', 0):.4f} |"
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, action="append", help="a table size (repeatable)")
    parser.add_argument("--million", action="store_true", help="also 1,000,000 rows")
    parser.add_argument("--curve-k", default="none", help="the report's curve (default: none)")
    parser.add_argument("--no-record", action="store_true", help="print only, write no result")
    parser.add_argument(
        "--before", action="store_true", help="also record the figures as evaluate_before.json (the baseline)"
    )
    args = parser.parse_args(argv)
    sizes = list(args.rows or DEFAULT_ROWS) + ([MILLION] if args.million else [])
    runs = []
    with tempfile.TemporaryDirectory() as folder:
        for rows in sizes:
            runs.append(measure(rows, Path(folder), args.curve_k))
            print(table(runs[-1:]).splitlines()[-1], flush=True)
    text = table(runs)
    print(text)
    if not args.no_record:
        record.write("evaluate", {"k": K, "runs": runs})
        if args.before:
            record.write("evaluate_before", {"k": K, "runs": runs})
        (record.RESULTS / "evaluate.md").write_text(
            "# evaluate and report at scale\n\n`python benchmarks/bench_evaluate.py "
            + " ".join(sys.argv[1:])
            + "` (clinic table, k = 5, DuckDB; each command a whole process), "
            + _load(record.read("evaluate"))
            + "\n\n"
            + text
            + "\n"
            + before_text(runs)
        )
    return 0


def _load(recorded: dict[str, Any]) -> str:
    """When and under what load a recorded run was measured."""
    env = recorded.get("environment", {})
    load = env.get("load_average", [None])[0]
    return f"measured on {env.get('date', '?')}, load average {load} on {env.get('cpus', '?')} cores"


def before_text(runs: list[dict[str, Any]]) -> str:
    """The baseline (results/evaluate_before.json, recorded by --before) and, for each size
    in both, evaluate's and report's seconds and peak memory before -> now."""
    if not record.path("evaluate_before").exists():
        return ""
    before = record.read("evaluate_before")
    lines = ["", f"Before: `evaluate_before.json`, {_load(before)}.", "", table(before["runs"]), ""]
    then = {r["rows"]: r for r in before["runs"]}
    for r in runs:
        b = then.get(r["rows"])
        if b is None:
            continue
        lines.append(
            f"- {r['rows']:,} rows: evaluate {b['evaluate_s']:.1f} s -> {r['evaluate_s']:.1f} s "
            f"({b['evaluate_s'] / b['anonymize_s']:.1f}x -> {r['evaluate_s'] / r['anonymize_s']:.1f}x "
            f"anonymize in the same run), {b['evaluate_mib']:,} -> {r['evaluate_mib']:,} MiB; report "
            f"{b['report_s']:.1f} s -> {r['report_s']:.1f} s, {b['report_mib']:,} -> {r['report_mib']:,} MiB"
        )
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    raise SystemExit(main())
