"""What ``sbc-sql suggest-k`` costs against one ``anonymize``: the whole search for the
largest k under a total NCP of 0.05 (by default) on Adult, against a plain anonymize at k=10.

    python benchmarks/bench_suggest_k.py [--runs 3] [--max-loss 0.05]

Adult's 30,162 clean rows and its 8 QIs in a DuckDB file. One warm-up of each (the kernels
compiled and cached), then the median of the runs: anonymize writes its release (replaced
from run to run), suggest-k writes nothing. Prints a Markdown report;
benchmarks/results/suggest_k.md keeps a run.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import duckdb

sys.path.insert(0, str(Path(__file__).resolve().parent))
import datasets

from sbc_sql import anonymize
from sbc_sql.quality.suggest import Suggestion, suggest_k

TABLE = "adult"


def timed(run: Callable[[], object], runs: int) -> tuple[float, list[float], object]:
    run()  # warm-up
    seconds, result = [], None
    for _ in range(runs):
        t = time.perf_counter()
        result = run()
        seconds.append(time.perf_counter() - t)
    return statistics.median(seconds), seconds, result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--max-loss", type=float, default=0.05)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        path = str(Path(tmp) / "adult.duckdb")
        with duckdb.connect(path) as con:
            n = datasets.load_adult(con, TABLE, columns=datasets.ADULT_QIS_8)
        qi = datasets.ADULT_QIS_8

        def plain() -> float:
            with anonymize(path, TABLE, 10, qi=qi, output="adult_k10", replace=True) as r:
                assert r.measures is not None
                return r.measures.total_ncp

        def search() -> Suggestion:
            return suggest_k(path, TABLE, max_loss=args.max_loss, qi=qi)

        one, one_all, ncp10 = timed(plain, args.runs)
        whole, whole_all, found = timed(search, args.runs)
    assert isinstance(found, Suggestion)
    print(f"Adult, {n:,} rows, {len(qi)} QIs; median of {args.runs} runs after a warm-up\n")
    print(
        f"- anonymize at k=10: {one:.2f} s (runs: {', '.join(f'{s:.2f}' for s in one_all)}), NCP {ncp10:.4f}"
    )
    print(
        f"- suggest-k --max-loss {args.max_loss:g}: {whole:.2f} s (runs: "
        f"{', '.join(f'{s:.2f}' for s in whole_all)}), {len(found.steps)} k tried, "
        f"{whole / one:.1f} anonymize runs' time"
    )
    chosen = found.step(found.k)
    if found.next_k is not None:
        after = f"the next k tried, {found.next_k}, {found.step(found.next_k).ncp:.4f}"
    else:
        after = "no larger k tried (the limit)"
    print(f"- chosen k = {found.k}, NCP {chosen.ncp:.4f}; {after}\n")
    print("| k | total NCP | under | classes | risk, highest | risk, mean | seconds |")
    print("|---|---|---|---|---|---|---|")
    for s in found.steps:
        print(
            f"| {s.k} | {s.ncp:.4f} | {'yes' if s.under else 'no'} | {s.classes:,} | "
            f"{100 * s.risk_highest:.2f} % | {100 * s.risk_mean:.2f} % | {s.seconds:.2f} |"
        )
    print(f"\n(in the order tried; preparing the table once took {found.seconds['prepare']:.2f} s)")


if __name__ == "__main__":
    main()
