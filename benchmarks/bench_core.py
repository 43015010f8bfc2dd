"""Core pipeline on UCI Adult: the paper's setting over its k list, and 30,162 x 8 QIs.

Prints, for each run, time, peak memory and NCP together, and writes a markdown table to
benchmarks/results/core.md. Every release is verified before it is counted.

    python benchmarks/bench_core.py            # both settings
    python benchmarks/bench_core.py --quick    # k in {2, 10, 50, 100} only
"""

from __future__ import annotations

import argparse
import resource
import sys
import time
from pathlib import Path

import duckdb

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import datasets  # noqa: E402

import sbc_sql  # noqa: E402
from sbc_sql import db as sbc_db  # noqa: E402
from sbc_sql.metrics import infer_layout  # noqa: E402
from sbc_sql.verification import tuple_sizes_sql  # noqa: E402

PAPER_K = [2, 5, 10, 20, 30, 40, 50, 60, 70, 80, 90, 100]
RESULTS = Path(__file__).resolve().parent / "results"


def peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


def distinct_tuples(con: duckdb.DuckDBPyConnection, original: str, release: str) -> int:
    layout = infer_layout(con, original, release)
    return int(sbc_db.fetch_one(con, tuple_sizes_sql(layout, release))[0])


def run(con, table: str, qis: list[str], k: int, mode: str = "auto") -> dict[str, object]:
    t = time.perf_counter()
    result = sbc_sql.anonymize(con, table, k, qi=qis, sensitive=["income"],
                               output=f"{table}_k{k}", replace=True, mode=mode)
    seconds = time.perf_counter() - t
    m = result.measures
    assert m is not None and result.verdict is not None and result.verdict.ok
    return {"k": k, "ncp": m.total_ncp, "classes": m.classes, "smallest": m.smallest,
            "tuples": distinct_tuples(con, table, result.release), "seconds": seconds,
            "cluster_s": result.timings.get("cluster", 0.0), "mode": result.mode,
            "stages": result.timings}


def setting_a(ks: list[int]) -> list[dict[str, object]]:
    con = duckdb.connect()
    datasets.load_adult(con, "adult5k", rows=5000, columns=datasets.ADULT_QIS_PAPER + ["income"])
    rows = [run(con, "adult5k", datasets.ADULT_QIS_PAPER, k) for k in ks]
    for r in rows:
        print(f"A  k={r['k']:>3}  NCP {r['ncp']:.4f}  classes {r['classes']:>5}  "
              f"tuples {r['tuples']:>5}  {r['seconds']:.2f} s  peak {peak_rss_mb():.0f} MB",
              flush=True)
    return rows


def setting_b(k: int = 10) -> dict[str, object]:
    con = duckdb.connect()
    datasets.load_adult(con, "adult", columns=datasets.ADULT_QIS_8 + ["income"])
    r = run(con, "adult", datasets.ADULT_QIS_8, k)
    stages = ", ".join(f"{s} {v:.3f}" for s, v in r["stages"].items())  # type: ignore[union-attr]
    print(f"B  30,162 x 8 QIs  k={k}  NCP {r['ncp']:.4f}  {r['seconds']:.2f} s "
          f"(mode {r['mode']}; {stages})  peak {peak_rss_mb():.0f} MB", flush=True)
    return r


def markdown(a: list[dict[str, object]], b: dict[str, object]) -> str:
    lines = ["| k | total NCP | classes | distinct tuples | seconds |", "|---|---|---|---|---|"]
    for r in a:
        lines.append(f"| {r['k']} | {r['ncp']:.4f} | {r['classes']} | {r['tuples']} | "
                     f"{r['seconds']:.2f} |")
    lines += ["", f"Adult 30,162 rows x 8 QIs, k = {b['k']}: total NCP {b['ncp']:.4f}, "
                  f"{b['seconds']:.2f} s end to end ({b['cluster_s']:.2f} s clustering, "
                  f"mode {b['mode']}), peak RSS {peak_rss_mb():.0f} MB"]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="k in {2, 10, 50, 100} only")
    args = parser.parse_args(argv)
    a = setting_a([2, 10, 50, 100] if args.quick else PAPER_K)
    b = setting_b()
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "core.md").write_text(markdown(a, b))
    print(markdown(a, b))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
