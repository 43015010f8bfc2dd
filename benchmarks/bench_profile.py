"""How ``sbc-sql profile`` counts the records unique on every combination of 1 to 3 QIs
fastest: one query with GROUPING SETS (one set per combination, one scan), or one
``GROUP BY`` query per combination.

    python benchmarks/bench_profile.py [--runs 5] [--postgres | --url postgresql://...]

On Adult's 30,162 clean rows and its 8 QIs (92 combinations), in DuckDB (in memory) and,
with --url or --postgres (a throwaway cluster, tests/pg_cluster.py), in PostgreSQL (its
table adult is replaced). Both ways run the same template (``sql/templates/profile_sets.sql``) and
must agree; the median of the runs is shown. Prints a Markdown table;
benchmarks/results/profile.md keeps a run.
"""

from __future__ import annotations

import argparse
import itertools
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

import duckdb

sys.path.insert(0, str(Path(__file__).resolve().parent))
import datasets

from sbc_sql.engines import connect
from sbc_sql.engines.base import Engine
from sbc_sql.quality.profile import SetFigures, WorkNames, set_figures

TABLE = "adult"


def combinations(n: int) -> list[tuple[int, ...]]:
    return [s for size in (1, 2, 3) for s in itertools.combinations(range(n), size)]


def one_query(engine: Engine, columns: list[str]) -> dict[tuple[int, ...], SetFigures]:
    return set_figures(engine, TABLE, columns, combinations(len(columns)), WorkNames.avoiding(columns))


def one_per_combination(engine: Engine, columns: list[str]) -> dict[tuple[int, ...], SetFigures]:
    names = WorkNames.avoiding(columns)
    out: dict[tuple[int, ...], SetFigures] = {}
    for s in combinations(len(columns)):
        out.update(set_figures(engine, TABLE, columns, [s], names))
    return out


def timed(run: Callable[[], object], runs: int) -> tuple[float, object]:
    seconds, result = [], None
    for _ in range(runs):
        t = time.perf_counter()
        result = run()
        seconds.append(time.perf_counter() - t)
    return statistics.median(seconds), result


def adult_duckdb() -> duckdb.DuckDBPyConnection:
    con = duckdb.connect()
    datasets.load_adult(con, TABLE, columns=datasets.ADULT_QIS_8)
    return con


def adult_postgres(url: str) -> Engine:
    import adbc_driver_postgresql.dbapi as adbc

    data = adult_duckdb().cursor().sql(f"SELECT * FROM {TABLE}").to_arrow_table()
    with adbc.connect(url, autocommit=True) as pg, pg.cursor() as cur:
        cur.execute(f"DROP TABLE IF EXISTS {TABLE}")
        cur.adbc_ingest(TABLE, data, mode="create")
        cur.execute(f"ANALYZE {TABLE}")
    return connect(url)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--url", help="a PostgreSQL database to measure too")
    parser.add_argument("--postgres", action="store_true", help="measure PostgreSQL on a throwaway cluster")
    args = parser.parse_args()
    cluster = None
    if args.postgres and not args.url:
        sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
        import pg_cluster

        started = pg_cluster.start()
        if isinstance(started, str):
            raise SystemExit(started)
        cluster, args.url = started, started.url
    try:
        measure(args)
    finally:
        if cluster is not None:
            cluster.stop()


def measure(args: argparse.Namespace) -> None:
    engines: list[tuple[str, Engine]] = [("DuckDB", connect(adult_duckdb()))]
    if args.url:
        engines.append(("PostgreSQL", adult_postgres(args.url)))
    columns = list(datasets.ADULT_QIS_8)
    print(
        f"Adult, 30,162 rows, {len(columns)} QIs, {len(combinations(len(columns)))} combinations; "
        f"median of {args.runs} runs\n"
    )
    print("| engine | one GROUPING SETS query (s) | one query per combination (s) | ratio |")
    print("|---|---|---|---|")
    for name, engine in engines:
        one, together = timed(lambda e=engine: one_query(e, columns), args.runs)
        many, apart = timed(lambda e=engine: one_per_combination(e, columns), args.runs)
        if together != apart:
            raise SystemExit(f"{name}: the two ways disagree")
        print(f"| {name} | {one:.3f} | {many:.3f} | {many / one:.1f} x |")
        engine.close()


if __name__ == "__main__":
    main()
