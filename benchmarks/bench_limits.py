"""What per-column limits (``--max-width``, ``--max-values``) cost: time, memory, NCP and
suppressed rows of ``anonymize`` on Adult at k=10 with each set of limits, against the same
run without limits, measured in the same process.

    python benchmarks/bench_limits.py [--runs 3] [--k 10]

Adult's 30,162 clean rows and its 8 QIs in a DuckDB file. One warm-up run (the kernels
compiled and cached), then the median of the runs for each row; every release is verified
before it is measured (anonymize reports nothing else). The widest age range and the
largest value sets are read back from the release's class table. Prints a Markdown report;
benchmarks/results/limits.md keeps a run.
"""

from __future__ import annotations

import argparse
import resource
import statistics
import sys
import tempfile
import time
from pathlib import Path

import duckdb

sys.path.insert(0, str(Path(__file__).resolve().parent))
import datasets

from sbc_sql import anonymize

TABLE = "adult"

#: (label, max_width, max_values)
CASES: list[tuple[str, dict[str, float], dict[str, int]]] = [
    ("none", {}, {}),
    ("age=10", {"age": 10}, {}),
    ("age=5", {"age": 5}, {}),
    ("age=2", {"age": 2}, {}),
    ("education=2", {}, {"education": 2}),
    ("occupation=2, native_country=1", {}, {"occupation": 2, "native_country": 1}),
    ("age=5, education=2, occupation=3", {"age": 5}, {"education": 2, "occupation": 3}),
]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--k", type=int, default=10)
    args = parser.parse_args()
    k = args.k
    with tempfile.TemporaryDirectory() as tmp:
        path = str(Path(tmp) / "adult.duckdb")
        with duckdb.connect(path) as con:
            n = datasets.load_adult(con, TABLE, columns=datasets.ADULT_QIS_8)
        qi = datasets.ADULT_QIS_8
        rows = []
        for label, width, values in CASES:

            def run(width: dict[str, float] = width, values: dict[str, int] = values) -> tuple[float, int]:
                with anonymize(
                    path, TABLE, k, qi=qi, output="rel", replace=True, max_width=width, max_values=values,
                    max_suppression=0.05,
                ) as r:  # fmt: skip
                    assert r.measures is not None and r.verdict is not None and r.verdict.ok
                    return r.measures.total_ncp, r.measures.suppressed

            run()  # warm-up
            seconds = []
            for _ in range(args.runs):
                t = time.perf_counter()
                ncp, suppressed = run()
                seconds.append(time.perf_counter() - t)
            with duckdb.connect(path, read_only=True) as con:
                widest, education, occupation, country = con.execute(
                    "SELECT max(age_max - age_min), max(len(education)), max(len(occupation)), "
                    "max(len(native_country)) FROM rel_classes"
                ).fetchone()
            median = statistics.median(seconds)
            rows.append((label, median, ncp, suppressed, widest, education, occupation, country))
        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    base_t, base_ncp = rows[0][1], rows[0][2]
    print(f"# Per-column limits on Adult ({n:,} rows, 8 QIs), k = {k}\n")
    print(
        f"`python benchmarks/bench_limits.py --runs {args.runs} --k {k}`: median of {args.runs} runs of "
        f"`anonymize` (written, verified, measured) after a warm-up; `--max-suppression 0.05`; "
        f"peak RSS of the process {peak:.0f} MB.\n"
    )
    print(
        "| limits | seconds | x no limits | total NCP | x no limits | suppressed | widest age "
        "| largest education set | occupation set | native_country set |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|")
    for label, t, ncp, sup, widest, edu, occ, country in rows:
        print(
            f"| {label} | {t:.2f} | {t / base_t:.2f} | {ncp:.4f} | {ncp / base_ncp:.2f} | {sup:,} | "
            f"{widest:g} | {edu} | {occ} | {country} |"
        )


if __name__ == "__main__":
    main()
