"""Two installed builds of sbc-sql side by side: the same `sbc-sql anonymize` processes,
alternated, on the same databases, so a change is measured against its baseline in one run
on one machine (whose load moves both alike).

Each build is a virtual environment with sbc-sql installed (`pip install .`, which compiles
the default's kernels). The script makes two DuckDB files once: UCI Adult (30,162 rows,
8 QIs) and a synthetic table of `--rows` rows, and times whole processes on each, k = 10.
It prints, per build and input: the median and range of the wall time, and the total NCP
the run reported (equal NCP is a quick check that the builds released the same classes).

    python benchmarks/bench_builds.py --baseline /tmp/before/.venv --candidate .venv
    python benchmarks/bench_builds.py ... --rows 1000000 --runs 5 --big-runs 3
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import duckdb

sys.path.insert(0, str(Path(__file__).resolve().parent))
import datasets

K = 10


def make_inputs(folder: Path, rows: int) -> dict[str, tuple[Path, str, list[str]]]:
    """The databases: name -> (file, table, role flags)."""
    adult = folder / "adult.duckdb"
    with duckdb.connect(str(adult)) as con:
        datasets.load_adult(con, "adult", columns=[*datasets.ADULT_QIS_8, "income"])
    synthetic = folder / "synthetic.duckdb"
    with duckdb.connect(str(synthetic)) as con:
        datasets.make_synthetic(con, "people", rows)
    adult_roles = [f"--qi={','.join(datasets.ADULT_QIS_8)}", "--sensitive=income"]
    # the synthetic table declares its roles in column comments; its other columns are QIs
    return {"adult": (adult, "adult", adult_roles), f"synthetic {rows:,}": (synthetic, "people", [])}


def run_once(venv: Path, db: Path, table: str, roles: list[str]) -> tuple[float, float]:
    """Seconds of one whole process, and the total NCP it reported."""
    command = [str(venv / "bin" / "sbc-sql"), "anonymize", "--db", str(db), "--table", table]
    command += ["--k", str(K), "--output", "bench_release", "--replace", "--json", *roles]
    started = time.perf_counter()
    done = subprocess.run(command, capture_output=True, text=True, check=False, cwd=db.parent)
    seconds = time.perf_counter() - started
    if done.returncode != 0:
        raise SystemExit(f"{venv}: {done.stderr.strip().splitlines()[-1]}")
    return seconds, float(json.loads(done.stdout)["total_ncp"])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--baseline", type=Path, required=True, help="venv of the baseline build")
    parser.add_argument("--candidate", type=Path, required=True, help="venv of the build measured")
    parser.add_argument("--rows", type=int, default=1_000_000, help="rows of the synthetic table")
    parser.add_argument("--runs", type=int, default=5, help="processes per build on Adult")
    parser.add_argument("--big-runs", type=int, default=3, help="processes per build on the synthetic table")
    args = parser.parse_args(argv)
    builds = {"baseline": args.baseline.resolve(), "candidate": args.candidate.resolve()}
    with tempfile.TemporaryDirectory() as scratch:
        inputs = make_inputs(Path(scratch), args.rows)
        for name, (db, table, roles) in inputs.items():
            runs = args.runs if name == "adult" else args.big_runs
            times: dict[str, list[float]] = {b: [] for b in builds}
            ncp: dict[str, set[float]] = {b: set() for b in builds}
            for venv in builds.values():  # one warm-up each: the OS caches the files
                run_once(venv, db, table, roles)
            for _ in range(runs):
                for build, venv in builds.items():
                    seconds, total = run_once(venv, db, table, roles)
                    times[build].append(seconds)
                    ncp[build].add(round(total, 12))
            medians = {b: statistics.median(t) for b, t in times.items()}
            for build in builds:
                t = times[build]
                print(
                    f"{name:<20} {build:<9} median {medians[build]:7.2f} s "
                    f"({min(t):.2f}-{max(t):.2f}, {len(t)} runs)  total NCP "
                    + ", ".join(f"{100 * v:.4f} %" for v in sorted(ncp[build])),
                    flush=True,
                )
            print(
                f"{name:<20} candidate / baseline: {medians['candidate'] / medians['baseline']:.3f}",
                flush=True,
            )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
