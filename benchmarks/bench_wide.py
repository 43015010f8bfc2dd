"""Wide benchmark: end-to-end anonymize on tables of many categorical QIs and few rows.

For each number of QIs it prints, in one run: rows, QIs, the seconds of every stage and total
NCP, so a statement whose cost grows faster than the number of QIs shows in its stage. The
tables come from `datasets.make_wide` (seeded, 2 to 50 values per QI, about 2 % NULL); the
default algorithm caps the categorical QIs (one bit each), so the run uses one without a cap
(Mondrian unless --algorithm). Results go to benchmarks/results/wide.md and wide.json (or
--output), from which report.py renders benchmarks/README.md's table.

    python benchmarks/bench_wide.py                          # 100, 200, 300 QIs x 2,000 rows
    python benchmarks/bench_wide.py --qis 50,100 --rows 5000 --algorithm kmember
    # an older checkout's code, its sbc_sql first on the path:
    PYTHONPATH=OLD_CHECKOUT python benchmarks/bench_wide.py --output wide_before
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import duckdb

sys.path.insert(0, str(Path(__file__).resolve().parent))
# the installed sbc_sql first (its kernels are compiled at install); else the checkout
sys.path.append(str(Path(__file__).resolve().parents[1]))

import datasets
import record

import sbc_sql

RESULTS = Path(__file__).resolve().parent / "results"
STAGES = ("plan", "stats", "pull", "cluster", "write", "verify", "measure")


def run(rows: int, qis: int, k: int, algorithm: str) -> dict[str, object]:
    """One wide table anonymized in a fresh in-memory database: its figures."""
    con = duckdb.connect()
    con.execute("SET enable_progress_bar = false")
    datasets.make_wide(con, "wide", rows, qis)
    started = time.perf_counter()
    result = sbc_sql.anonymize(con, "wide", k, algorithm=algorithm, output=f"wide_k{k}")
    seconds = time.perf_counter() - started
    assert result.verdict is not None and result.verdict.ok and result.measures is not None
    con.close()
    return {
        "rows": rows,
        "qis": qis,
        "k": k,
        "algorithm": algorithm,
        "seconds": seconds,
        "stages": dict(result.timings),
        "ncp": result.measures.total_ncp,
        "classes": result.measures.classes,
        "load_average": record.environment()["load_average"],
    }


HEADER = (
    "| rows | QIs | algorithm | k | seconds | "
    + " | ".join(STAGES)
    + " | total NCP |\n|"
    + "---|" * (6 + len(STAGES))
)


def line(m: dict[str, object]) -> str:
    """One row of the wide table (report.py renders benchmarks/README.md's from the same figures)."""
    stages = m["stages"]
    assert isinstance(stages, dict)
    return (
        f"| {m['rows']:,} | {m['qis']} | {m['algorithm']} | {m['k']} | {m['seconds']:.2f} | "
        + " | ".join(f"{stages.get(s, 0.0):.2f}" for s in STAGES)
        + f" | {100 * float(m['ncp']):.2f} % |"  # type: ignore[arg-type]
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--qis", default="100,200,300", help="comma-separated numbers of categorical QIs")
    parser.add_argument("--rows", type=int, default=2000)
    parser.add_argument("--k", type=int, default=10)
    parser.add_argument("--algorithm", default="mondrian", help="one without a cap on categorical QIs")
    parser.add_argument("--output", default="wide", help="results/<output>.md and .json")
    args = parser.parse_args(argv)
    print(HEADER, flush=True)
    runs = []
    for qis in (int(x) for x in args.qis.split(",") if x):
        runs.append(run(args.rows, qis, args.k, args.algorithm))
        print(line(runs[-1]), flush=True)
    text = HEADER + "\n" + "\n".join(line(m) for m in runs) + "\n"
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / f"{args.output}.md").write_text(text)
    record.write(args.output, {"runs": runs})
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
