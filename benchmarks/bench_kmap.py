"""k-map and delta-presence: samples of Adult released against Adult as their population.

UCI Adult's 30,162 clean rows (8 QIs) are the population; a seeded 10 % and a 1 % sample of
them (income sensitive) are anonymized at k = 3 and 5, first on k alone, then with k-map
(--k-map 10 and 50) and with delta-presence (--delta-max 0.2, --delta-min 0.01 within
--max-suppression 0.05), each release verified in SQL by the run. For the release on k
alone the same figures are measured against the population afterwards
(``sbc_sql.verify``'s models), to show what the criteria change: the fewest population rows
a class matches and the largest share of them in the release. Each row gives total NCP,
classes, rows suppressed, the figures achieved and the run's seconds, with its ratio to the
run on k alone of the same sample and k (a warm-up run compiles the kernels first).

    python benchmarks/bench_kmap.py        # about a minute

Prints the table and writes benchmarks/results/kmap.json.
"""

from __future__ import annotations

import resource
import sys
import time
from pathlib import Path
from typing import Any

import duckdb

sys.path.insert(0, str(Path(__file__).resolve().parent))
import datasets
import record

import sbc_sql
from sbc_sql import engines
from sbc_sql.model import Column
from sbc_sql.plan import Population
from sbc_sql.stages import population as population_stage

SHARES = (0.10, 0.01)
KS = (3, 5)
SEED = 11
SETTINGS: tuple[tuple[str, dict[str, Any]], ...] = (
    ("k alone", {}),
    ("k-map 10", {"k_map": 10}),
    ("k-map 50", {"k_map": 50}),
    ("delta-max 0.2", {"delta_max": 0.2}),
    (
        "k-map 50, delta in [0.01, 0.2]",
        {"k_map": 50, "delta_min": 0.01, "delta_max": 0.2, "max_suppression": 0.05},
    ),
)


def measured(con: duckdb.DuckDBPyConnection, release: str) -> dict[str, float]:
    """A release's figures against the population, measured afterwards."""
    asked = Population("people", 2, 0.0, 1.0)
    engine = engines.connect(con)
    qis = tuple(c for c in engine.describe("sample").columns if c.name in datasets.ADULT_QIS_8)
    columns = tuple(Column(c.name, c.type, "qi", c.kind, c.temporal) for c in qis)
    out: dict[str, float] = {}
    for model in population_stage.models(engine, asked, columns, release):
        out.update({k: float(v) for k, v in model.measure(engine, release).items()})
    return out


def main() -> int:
    con = duckdb.connect()
    columns = [*datasets.ADULT_QIS_8, "income"]
    datasets.load_adult(con, "adult", columns=columns)
    qis = ", ".join(datasets.ADULT_QIS_8)
    con.execute(f"CREATE TABLE people AS SELECT {qis} FROM adult")
    # the kernels' first call, outside every timing
    with sbc_sql.anonymize(con, "adult", 5, qi=datasets.ADULT_QIS_8, sensitive="income", output="warm"):
        pass
    runs = []
    for share in SHARES:
        keep = int(share * 10000)
        con.execute(
            "CREATE OR REPLACE TABLE sample AS SELECT * FROM adult "
            f"WHERE hash(age, workclass, education, occupation, native_country, {SEED}) % 10000 < {keep}"
        )
        (n,) = con.execute("SELECT COUNT(*) FROM sample").fetchone()
        for k in KS:
            alone = None
            for name, asked in SETTINGS:
                options = dict(asked)
                max_suppression = options.pop("max_suppression", 0.01)
                population = {"population": "people", **options} if options else {}
                t = time.perf_counter()
                with sbc_sql.anonymize(
                    con,
                    "sample",
                    k,
                    qi=datasets.ADULT_QIS_8,
                    sensitive="income",
                    output="r",
                    replace=True,
                    max_suppression=max_suppression,
                    **population,
                ) as result:
                    seconds = time.perf_counter() - t
                    assert result.verdict is not None and result.verdict.ok
                    m = result.measures
                    assert m is not None
                    figures = dict(result.achieved) if options else measured(con, "r")
                    row = {
                        "share": share,
                        "rows": int(n),
                        "k": k,
                        "setting": name,
                        "enforced": bool(options),
                        "total_ncp": m.total_ncp,
                        "classes": m.classes,
                        "suppressed": m.suppressed,
                        "fewest_population_matches": figures.get("fewest_population_matches"),
                        "smallest_delta": figures.get("smallest_delta"),
                        "largest_delta": figures.get("largest_delta"),
                        "seconds": seconds,
                    }
                if alone is None:
                    alone = row
                row["ncp_ratio"] = row["total_ncp"] / alone["total_ncp"]
                row["seconds_ratio"] = row["seconds"] / alone["seconds"]
                runs.append(row)
                print(
                    f"{share:.0%} ({n:,} rows), k={k}, {name}: NCP {100 * row['total_ncp']:.2f} % "
                    f"({row['ncp_ratio']:.2f}x), {row['classes']:,} classes, fewest matches "
                    f"{row['fewest_population_matches']}, delta {row['smallest_delta']} .. "
                    f"{row['largest_delta']}, {seconds:.2f} s ({row['seconds_ratio']:.2f}x)",
                    flush=True,
                )
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024**2
    print(table(runs))
    print(f"peak RSS of this process {peak:.2f} GB")
    record.write("kmap", {"runs": runs, "peak_rss_gb": peak, "population_rows": 30162})
    return 0


def _figure(value: float | None, fmt: str) -> str:
    return "—" if value is None else format(value, fmt)


def table(runs: list[dict[str, Any]]) -> str:
    """The Markdown table of a results file's runs."""
    head = (
        "| sample | k | criteria | total NCP | x k alone | classes | suppressed | fewest population "
        "matches | delta (smallest, largest) | seconds | x k alone |"
    )
    lines = [head, "|---|---:|---|---:|---:|---:|---:|---:|---|---:|---:|"]
    for r in runs:
        setting = r["setting"] if r["enforced"] else f"{r['setting']} (measured after)"
        delta = f"{_figure(r['smallest_delta'], '.4f')}, {_figure(r['largest_delta'], '.4f')}"
        lines.append(
            f"| {r['share']:.0%} ({r['rows']:,} rows) | {r['k']} | {setting} | {100 * r['total_ncp']:.2f} % "
            f"| {r['ncp_ratio']:.2f} | {r['classes']:,} | {r['suppressed']:,} "
            f"| {_figure(r['fewest_population_matches'], ',.0f')} | {delta} | {r['seconds']:.2f} "
            f"| {r['seconds_ratio']:.2f} |"
        )
    return "\n".join(lines)


if __name__ == "__main__":
    raise SystemExit(main())
