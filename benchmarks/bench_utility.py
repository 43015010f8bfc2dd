"""Utility benchmark: total NCP of sbc-sql's default against published figures and baselines.

Table 1 is Adult (all 30,162 clean rows, 8 QIs, income sensitive): the published figures of
ARX, greedy k-member and the paper's SBCA, then every algorithm measured in this run through
the full anonymize pipeline (each release verified, NCP computed in SQL), then the ablations
of SBCA+ (one switch off at a time, clustered on the same QIData and scored with the numpy
twin of the SQL NCP). Table 2 is a 50,000-row synthetic population whose QIs mix numbers, a
date and categoricals of up to 1,000 values; it also checks block mode against exact mode.
Writes benchmarks/results/utility.md and utility.json (from which report.py renders
benchmarks/README.md's tables).

    python benchmarks/bench_utility.py
    python benchmarks/bench_utility.py --incognito-ks 2,5,10,25,50,100   # ~3 more minutes
"""

from __future__ import annotations

import argparse
import functools
import os
import platform
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import duckdb

sys.path.insert(0, str(Path(__file__).resolve().parent))
# the installed sbc_sql first (its kernels are compiled at install); else the checkout
sys.path.append(str(Path(__file__).resolve().parents[1]))

import datasets
import record

from sbc_sql import compare as cmp
from sbc_sql import engines
from sbc_sql.cluster.blocks import BLOCK_ROWS, BLOCK_ROWS_PER_K, blocked, default_block_rows
from sbc_sql.cluster.model import QIData
from sbc_sql.cluster.ncp import total_ncp
from sbc_sql.cluster.registry import block_algorithm
from sbc_sql.cluster.sbca_plus.algorithm import sbca_plus
from sbc_sql.run import make_options
from sbc_sql.run.prepare import prepare

RESULTS = Path(__file__).resolve().parent / "results"
KS = (2, 5, 10, 25, 50, 100)
BLOCK_KS = (5, 10, 50)
BLOCK_TARGET = 0.05
DEFAULT = "**sbc-sql default** (`sbca`, blocks)"
BASELINES = ("sbca-paper", "kmember", "mondrian", "incognito", "datafly")
PUBLISHED = (
    (
        "published-arx",
        "published: ARX 3.9 local recoding (value sets)",
        (1.28, 3.73, 5.98, 10.07, 14.06, 18.12),
    ),
    ("published-kmember", "published: greedy k-member", (None, None, 4.41, 8.59, 13.04, 18.84)),
    ("published-sbca-paper", "published: the paper's SBCA", (1.08, 3.63, 6.63, 12.57, 19.01, 27.87)),
)
ABLATIONS = (
    # every switch on, every row clustered one by one: what clustering distinct tuples buys
    ("tuples-off", "ablation: tuples off (every row clustered)", {}),
    ("growth-off", "ablation: growth off", {"growth": False}),
    ("seeds-first", "ablation: seeds = first", {"seeds": "first"}),
    ("refine-off", "ablation: refine off", {"refine": False}),
    ("resplit-off", "ablation: pairs of classes split anew off (refine on)", {"rounds": 0}),
    ("order-sort", "ablation: order = the paper's sort (blocks too)", {"order": "sort"}),
    (
        "all-off",
        "ablation: all off (the paper's SBCA, blocks of the paper's order)",
        {"growth": False, "seeds": "first", "refine": False, "order": "sort"},
    ),
)
WARMUP_ROWS = 500


@dataclass(frozen=True)
class Source:
    """A table to anonymize and the roles of its columns."""

    con: duckdb.DuckDBPyConnection
    table: str
    qis: tuple[str, ...]
    sensitive: tuple[str, ...]
    drop: tuple[str, ...] = ()


@dataclass
class Row:
    """One line of a results table: total NCP (%) and seconds per k; None where not run.

    ``key`` names the row in utility.json (an algorithm, an ablation, a published source).
    """

    key: str
    label: str
    ncp: dict[int, float | None] = field(default_factory=dict)
    seconds: dict[int, float | None] = field(default_factory=dict)


def pipeline_row(
    src: Source, key: str, label: str, algorithm: str, ks: Sequence[int], mode: str = "exact"
) -> Row:
    """Anonymize at every k through the full pipeline (the table prepared once); seconds are each
    release's clustering, writing, verification and measurement."""
    row = Row(key, label)

    def show(r: cmp.CompareRow) -> None:
        row.ncp[r.k] = 100 * r.ncp
        row.seconds[r.k] = r.seconds
        print(f"  {label:<45} k={r.k:>3}  NCP {100 * r.ncp:6.2f} %  {r.seconds:7.2f} s", flush=True)

    cmp.compare(
        src.con,
        src.table,
        ks,
        [algorithm],
        mode=mode,
        qi=list(src.qis),
        sensitive=list(src.sensitive),
        drop=list(src.drop),
        on_row=show,
    )
    return row


def qi_data(src: Source) -> QIData:
    """The rows the pipeline would cluster one by one (the ablation's switches are those of
    the row kernels), without writing a release."""
    options = make_options(2, qi=src.qis, sensitive=src.sensitive, drop=src.drop, tuples=False)
    data = prepare(engines.connect(src.con), src.table, options).data
    assert data is not None
    return data


def ablation_row(data: QIData, key: str, label: str, switches: dict[str, object], ks: Sequence[int]) -> Row:
    """The default with some switches off, in its blocks; seconds are the clustering alone."""
    row = Row(key, label)
    for k in ks:
        started = time.perf_counter()
        per_block = functools.partial(block_algorithm(k), **switches)
        labels = blocked(
            data,
            k,
            per_block,
            block_size=default_block_rows(k),
            categorical_by=str(switches.get("order", "coarse")),
        )
        row.seconds[k] = time.perf_counter() - started
        row.ncp[k] = 100 * total_ncp(data, labels)
        print(f"  {label:<45} k={k:>3}  NCP {row.ncp[k]:6.2f} %  {row.seconds[k]:7.2f} s", flush=True)
    return row


def published_rows() -> list[Row]:
    """The literature's figures, given for KS."""
    return [Row(key, label, dict(zip(KS, figures, strict=True))) for key, label, figures in PUBLISHED]


def table(rows: Sequence[Row], ks: Sequence[int], measure: str) -> str:
    """Markdown table of one measure ("ncp" or "seconds"), a row per Row, a column per k."""

    def cell(row: Row, k: int) -> str:
        value = getattr(row, measure).get(k)
        return "—" if value is None else f"{value:.2f}"

    lines = ["| | " + " | ".join(f"k={k}" for k in ks) + " |", "|---|" + "---:|" * len(ks)]
    lines += [f"| {r.label} | " + " | ".join(cell(r, k) for k in ks) + " |" for r in rows]
    return "\n".join(lines) + "\n"


def losses(default: Row, others: Sequence[Row], ks: Sequence[int]) -> list[str]:
    """Every (row, k) where the default's NCP is not strictly below the other row's."""
    out = []
    for other in others:
        for k in ks:
            theirs, ours = other.ncp.get(k), default.ncp.get(k)
            if theirs is not None and ours is not None and ours >= theirs:
                out.append(f"{other.label} at k={k} ({ours:.2f} vs {theirs:.2f})")
    return out


def verdict(default: Row, others: Sequence[Row], ks: Sequence[int]) -> str:
    lost = losses(default, others, ks)
    if not lost:
        return "**The default is below every other row at every k.**"
    return (
        "**The default is not below every other row at every k**; it is not lower than: "
        + "; ".join(lost)
        + "."
    )


def connect() -> duckdb.DuckDBPyConnection:
    """An in-memory database that keeps its progress bar off the benchmark's output."""
    con = duckdb.connect()
    con.execute("SET enable_progress_bar = false")
    return con


def warm_up(algorithms: Sequence[str]) -> float:
    """Run every algorithm once on a small Adult slice, so compile time is not timed later."""
    started = time.perf_counter()
    con = connect()
    datasets.load_adult(con, "warmup", rows=WARMUP_ROWS, columns=datasets.ADULT_QIS_8 + ["income"])
    src = Source(con, "warmup", tuple(datasets.ADULT_QIS_8), ("income",))
    cmp.compare(con, "warmup", [2], list(algorithms), mode="exact", qi=list(src.qis), sensitive=["income"])
    sbca_plus(qi_data(src), 2, growth=False, seeds="first", refine=False)
    con.close()
    return time.perf_counter() - started


def describe(src: Source) -> str:
    """One line per QI: its type, distinct values and, for numbers and dates, the range."""
    info = dict(
        src.con.execute(
            f"SELECT column_name, data_type FROM information_schema.columns WHERE table_name = '{src.table}'"
        ).fetchall()
    )
    lines = ["| QI | type | distinct values | range |", "|---|---|---:|---|"]
    for q in src.qis:
        distinct, lo, hi = src.con.execute(
            f'SELECT count(DISTINCT "{q}"), min("{q}"), max("{q}") FROM "{src.table}"'
        ).fetchone()
        span = f"{lo} .. {hi}" if info[q] != "VARCHAR" else "—"
        lines.append(f"| {q} | {info[q]} | {distinct:,} | {span} |")
    return "\n".join(lines) + "\n"


def figures(rows: Sequence[Row], ks: Sequence[int]) -> list[dict[str, object]]:
    """Rows as utility.json holds them: NCP (%) and seconds as lists aligned with ``ks``."""
    return [
        {
            "key": r.key,
            "label": r.label,
            "ncp": [r.ncp.get(k) for k in ks],
            "seconds": [r.seconds.get(k) for k in ks],
        }
        for r in rows
    ]


def adult_section(ks: Sequence[int]) -> tuple[str, dict[str, object]]:
    con = connect()
    n = datasets.load_adult(con, "adult", columns=datasets.ADULT_QIS_8 + ["income"])
    src = Source(con, "adult", tuple(datasets.ADULT_QIS_8), ("income",))
    print(f"Adult: {n:,} rows", flush=True)
    default = pipeline_row(src, "sbca", DEFAULT, "sbca", ks, mode="auto")
    measured = [pipeline_row(src, a, f"{a} (measured)", a, ks) for a in BASELINES]
    data = qi_data(src)
    ablations = [ablation_row(data, key, label, switches, ks) for key, label, switches in ABLATIONS]
    published = published_rows()
    rows = published + [default] + measured + ablations
    check, check_figures = blocks_check(src, default)
    text = (
        f"## Table 1: Adult, {n:,} rows x {len(src.qis)} QIs ({', '.join(src.qis)}); "
        "income sensitive\n\n"
        "Total NCP (%), lower is better. Published rows are figures quoted from the literature "
        "on the same data and QIs; measured rows ran in this run through the full pipeline "
        "(release written, verified k-anonymous, NCP computed in SQL); ablation rows are "
        "the default with switches off, in the same blocks, on the same pulled rows (every "
        "row clustered one by one, as with tuples off) and scored by the numpy twin of the "
        "SQL NCP.\n\n"
        + table(rows, ks, "ncp")
        + f"\n{verdict(default, published + measured + ablations, ks)}\n\n"
        "Seconds per run (measured rows: the whole anonymize: stats, pull, cluster, write, "
        "verify, measure; ablation rows: the clustering alone):\n\n"
        + table([default] + measured + ablations, ks, "seconds")
        + check
    )
    return text, {
        "rows": n,
        "qis": list(src.qis),
        "ks": list(ks),
        "table": figures(rows, ks),
        "blocks_check": check_figures,
    }


def synthetic_section(
    ks: Sequence[int], rows: int, seed: int, incognito_ks: Sequence[int]
) -> tuple[str, dict[str, object]]:
    con = connect()
    datasets.make_synthetic(con, "people", rows, seed)
    src = Source(
        con, "people", tuple(datasets.SYNTH_QIS), (datasets.SYNTH_SENSITIVE,), (datasets.SYNTH_IDENTIFIER,)
    )
    print(f"synthetic: {rows:,} rows, seed {seed}", flush=True)
    default = pipeline_row(src, "sbca", DEFAULT, "sbca", ks, mode="auto")
    measured = [
        pipeline_row(src, a, f"{a} (measured)", a, incognito_ks if a == "incognito" else ks)
        for a in BASELINES
    ]
    text = (
        f"## Table 2: synthetic population, {rows:,} rows (seed {seed}); "
        f"{datasets.SYNTH_SENSITIVE} sensitive, {datasets.SYNTH_IDENTIFIER} dropped\n\n"
        "`benchmarks/datasets.py: make_synthetic`: ages shaped like a population pyramid, "
        "log-normal incomes tied to age, visit dates in 2015-2025 (a DATE QI, generalized as "
        "a date range), Zipf-skewed region, occupation, employer and 3-digit zip, and a "
        "diagnosis that depends on age. Its QIs:\n\n"
        + describe(src)
        + "\nTotal NCP (%), every row measured in this run through the full pipeline "
        "(release written, verified k-anonymous, NCP computed in SQL):\n\n"
        + table([default] + measured, ks, "ncp")
        + f"\n{verdict(default, measured, ks)}\n"
    )
    if sorted(incognito_ks) != sorted(ks):
        slow = measured[BASELINES.index("incognito")].seconds
        text += (
            f"\n`incognito` takes {sum(slow.values()) / len(slow):.0f} s per k on this set "
            f"(its lattice search), so it runs only at k = "
            f"{', '.join(map(str, incognito_ks))} here, to keep the script within its "
            "budget; `--incognito-ks` sets the list.\n"
        )
    text += "\nSeconds per run (the whole anonymize):\n\n" + table([default] + measured, ks, "seconds")
    check, check_figures = blocks_check(src, default)
    return text + check, {
        "rows": rows,
        "seed": seed,
        "qis": list(src.qis),
        "ks": list(ks),
        "table": figures([default] + measured, ks),
        "blocks_check": check_figures,
    }


def blocks_check(src: Source, blocks: Row) -> tuple[str, list[dict[str, float]]]:
    """Block mode's NCP (the default) against exact mode's (``--exact``, one block): at most
    BLOCK_TARGET worse. Returns the text and, per k, both NCPs (%) and seconds."""
    lines = [
        "| k | exact NCP % | blocks NCP % | relative difference | exact s | blocks s |",
        "|---:|---:|---:|---:|---:|---:|",
    ]
    exact = pipeline_row(src, "sbca-exact", "sbca, --exact", "sbca", BLOCK_KS, mode="exact")
    rel = {k: (blocks.ncp[k] - exact.ncp[k]) / exact.ncp[k] for k in BLOCK_KS}
    lines += [
        f"| {k} | {exact.ncp[k]:.2f} | {blocks.ncp[k]:.2f} | {100 * rel[k]:+.1f} % "
        f"| {exact.seconds[k]:.2f} | {blocks.seconds[k]:.2f} |"
        for k in BLOCK_KS
    ]
    worst = max(rel.values())
    met = "met" if worst <= BLOCK_TARGET else "NOT met"
    text = (
        f"\n\nBlock mode's NCP is at most {100 * max(worst, 0.0):.1f} % above exact mode's "
        f"(target: within {100 * BLOCK_TARGET:.0f} %): {met}."
    )
    better = [str(k) for k in BLOCK_KS if rel[k] < -BLOCK_TARGET]
    if better:
        text += (
            f" At k = {', '.join(better)} block mode is more than "
            f"{100 * BLOCK_TARGET:.0f} % *below* exact mode."
        )
    sizes = ", ".join(f"{default_block_rows(k):,} at k = {k}" for k in BLOCK_KS)
    check = [
        {
            "k": k,
            "exact_ncp": exact.ncp[k],
            "blocks_ncp": blocks.ncp[k],
            "exact_seconds": exact.seconds[k],
            "blocks_seconds": blocks.seconds[k],
        }
        for k in BLOCK_KS
    ]
    return (
        "\nThe default (block mode) against `--exact` (one block, each class choosing "
        "among its seed's nearest rows), through the pipeline "
        f"(blocks of max({BLOCK_ROWS:,}, {BLOCK_ROWS_PER_K} k) rows of the coarse order: "
        f"{sizes}):\n\n" + "\n".join(lines) + text + "\n",
        check,
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--synthetic-rows", type=int, default=50_000)
    parser.add_argument("--seed", type=int, default=11)
    parser.add_argument(
        "--incognito-ks",
        default="2,10,100",
        help="k list for incognito on the synthetic set (about a minute per k)",
    )
    args = parser.parse_args(argv)
    command = " ".join(["python benchmarks/bench_utility.py", *(sys.argv[1:] if argv is None else argv)])
    started = time.perf_counter()
    warm = warm_up(("sbca",) + BASELINES)
    adult, adult_figures = adult_section(KS)
    synthetic, synthetic_figures = synthetic_section(
        KS, args.synthetic_rows, args.seed, cmp.parse_ks(args.incognito_ks)
    )
    wall = time.perf_counter() - started
    text = (
        "# Utility: total NCP of sbc-sql's default against published figures and "
        "baselines\n\n"
        f"Produced by `{command}` in {wall:.0f} s of wall time (including {warm:.1f} s "
        f"of warm-up that compiles the numba kernels) on {os.cpu_count()} CPU core(s), "
        f"DuckDB {duckdb.__version__}, Python {platform.python_version()}.\n\n" + adult + "\n" + synthetic
    )
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "utility.md").write_text(text)
    record.write(
        "utility",
        {
            "seconds": wall,
            "warm_up_seconds": warm,
            "adult": adult_figures,
            "synthetic": synthetic_figures,
        },
    )
    print(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
