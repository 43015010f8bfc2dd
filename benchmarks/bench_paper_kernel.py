"""The paper's SBCA: its own numba kernel against SBCA+ with every switch off.

``sbca_plus(growth=False, seeds="first", refine=False, order="sort")`` gives the labels of
the paper's SBCA. This times ``--algorithm sbca-paper`` as the registry runs it (exact on
50,000 synthetic rows, in blocks on 200,000) and SBCA+ with every switch off on the same
pulled QIData, checks the labels are identical and scores them with the numpy NCP. Where the
paper's own kernel module (``sbc_sql.cluster.sbca_paper_kernels``) is still importable it is
timed too. Writes benchmarks/results/paper_kernel.md (or ``--output``).

    python benchmarks/bench_paper_kernel.py
    python benchmarks/bench_paper_kernel.py --runs 5 --k 10
    # an older checkout's code, its sbc_sql first on the path:
    PYTHONPATH=OLD_CHECKOUT python benchmarks/bench_paper_kernel.py --output paper_kernel_before.md
"""

from __future__ import annotations

import argparse
import functools
import importlib
import importlib.util
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

import duckdb
import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.append(str(Path(__file__).resolve().parents[1]))

import datasets

from sbc_sql import engines
from sbc_sql.cluster.blocks import DEFAULT_BLOCK_SIZE, blocked
from sbc_sql.cluster.model import QIData
from sbc_sql.cluster.ncp import total_ncp
from sbc_sql.cluster.registry import run_clustering
from sbc_sql.cluster.sbca_plus.algorithm import sbca_plus
from sbc_sql.run import make_options
from sbc_sql.run.prepare import prepare

RESULTS = Path(__file__).resolve().parent / "results"
CASES = (("exact", 50_000), ("blocks", 200_000))
ALL_OFF = {"growth": False, "seeds": "first", "refine": False, "order": "sort"}


def qi_data(rows: int, seed: int) -> QIData:
    """The synthetic population's QIData as the pipeline pulls it."""
    con = duckdb.connect()
    con.execute("SET enable_progress_bar = false")
    datasets.make_synthetic(con, "people", rows, seed)
    qis, sensitive, drop = list(datasets.SYNTH_QIS), [datasets.SYNTH_SENSITIVE], [datasets.SYNTH_IDENTIFIER]
    options = make_options(2, qi=qis, sensitive=sensitive, drop=drop, tuples=False)
    data = prepare(engines.connect(con), "people", options).data
    con.close()
    assert data is not None
    return data


def timed(fn: Callable[[], np.ndarray], runs: int) -> tuple[float, float, np.ndarray]:
    """Median and least seconds over ``runs`` calls after one untimed call (compilation), and
    the labels. On a shared machine the least is the steadier figure."""
    labels = fn()
    times = []
    for _ in range(runs):
        started = time.perf_counter()
        labels = fn()
        times.append(time.perf_counter() - started)
    return statistics.median(times), min(times), labels


def has_kernel() -> bool:
    return importlib.util.find_spec("sbc_sql.cluster.sbca_paper_kernels") is not None


def contenders(data: QIData, k: int, mode: str, workers: int) -> dict[str, Callable[[], np.ndarray]]:
    off = functools.partial(sbca_plus, **ALL_OFF)
    out: dict[str, Callable[[], np.ndarray]] = {}
    try:
        paper = importlib.import_module("sbc_sql.cluster.sbca_paper_kernels")
    except ImportError:
        paper = None
    if paper is not None and mode == "exact":
        out["paper kernel (sbca_compiled)"] = lambda: paper.sbca_compiled(data, k)
    elif paper is not None:
        out["paper kernel (CompiledSBCA)"] = lambda: blocked(data, k, paper.CompiledSBCA(), workers=workers)
    if mode == "exact":
        out["SBCA+ all switches off"] = lambda: off(data, k)
    else:
        out["SBCA+ all switches off"] = lambda: blocked(
            data, k, off, block_size=DEFAULT_BLOCK_SIZE, workers=workers, categorical_by="frequency"
        )
    out["--algorithm sbca-paper"] = lambda: (
        run_clustering(data, k, algorithm="sbca-paper", mode=mode, workers=workers).labels
    )
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--k", type=int, default=10)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--seed", type=int, default=11)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--output", default="paper_kernel.md", help="file name in benchmarks/results")
    args = parser.parse_args()
    lines = [
        "# The paper's SBCA: its kernel against SBCA+ with every switch off",
        "",
        f"Synthetic population (`datasets.make_synthetic`, seed {args.seed}), k = {args.k}, "
        f"{args.workers} worker(s); median and least of {args.runs} runs after one untimed run; "
        f"the paper's own kernel module {'present' if has_kernel() else 'absent'}.",
        "",
        "| mode | rows | contender | median s | least s | total NCP (%) | labels as the first row |",
        "|---|---:|---|---:|---:|---:|---|",
    ]
    for mode, rows in CASES:
        data = qi_data(rows, args.seed)
        first = None
        for name, fn in contenders(data, args.k, mode, args.workers).items():
            seconds, least, labels = timed(fn, args.runs)
            ncp = 100 * total_ncp(data, labels)
            same = "—" if first is None else ("identical" if np.array_equal(first, labels) else "DIFFERENT")
            first = labels if first is None else first
            timing = f"{seconds:7.3f} s (least {least:.3f})"
            print(f"{mode:<6} {rows:>8,} {name:<32} {timing}  NCP {ncp:6.3f} %  {same}", flush=True)
            lines.append(f"| {mode} | {rows:,} | {name} | {seconds:.3f} | {least:.3f} | {ncp:.3f} | {same} |")
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / args.output).write_text("\n".join(lines) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
