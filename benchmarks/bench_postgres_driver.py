"""Which PostgreSQL driver pulls rows as Arrow fastest: psycopg 3 (a server-side cursor, or
binary COPY, each turned into Arrow columns) or the ADBC PostgreSQL driver (Arrow natively).

    python benchmarks/bench_postgres_driver.py [--url postgresql://...] [--rows 1000000]

(Whole runs on each engine, stage by stage: benchmarks/bench_postgres.py.)

Needs psycopg[binary] besides the postgres extra. Without --url a throwaway cluster is
started (tests/pg_cluster.py) and removed afterwards.
Prints a Markdown table; benchmarks/results/postgres_driver.md keeps a run.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pyarrow as pa

QUERY = "SELECT id, age, zip, sex, income FROM bench_rows"
NAMES = ["id", "age", "zip", "sex", "income"]


def fill(url: str, rows: int) -> None:
    import psycopg

    with psycopg.connect(url, autocommit=True) as con:
        con.execute("DROP TABLE IF EXISTS bench_rows")
        con.execute(
            "CREATE TABLE bench_rows AS SELECT i::bigint AS id, (18 + i % 70)::int AS age, "
            "'z' || (i % 500)::text AS zip, CASE WHEN i % 2 = 0 THEN 'F' ELSE 'M' END AS sex, "
            f"(i % 9973) * 1.5::float8 AS income FROM generate_series(1, {rows}) AS g(i)"
        )
        con.execute("VACUUM ANALYZE bench_rows")


def psycopg_cursor(url: str) -> pa.Table:
    import psycopg

    batches = []
    with psycopg.connect(url) as con, con.cursor(name="sbc_bench") as cur:
        cur.itersize = 65536
        cur.execute(QUERY)
        while rows := cur.fetchmany(65536):
            columns = list(zip(*rows, strict=True))
            batches.append(pa.RecordBatch.from_arrays([pa.array(c) for c in columns], names=NAMES))
    return pa.Table.from_batches(batches)


def psycopg_copy(url: str) -> pa.Table:
    import psycopg

    batches = []
    copy_out = f"COPY ({QUERY}) TO STDOUT (FORMAT BINARY)"
    with psycopg.connect(url) as con, con.cursor() as cur, cur.copy(copy_out) as copy:
        copy.set_types(["int8", "int4", "text", "text", "float8"])
        chunk: list[tuple[object, ...]] = []
        for row in copy.rows():
            chunk.append(row)
            if len(chunk) == 65536:
                batches.append(_batch(chunk))
                chunk = []
        if chunk:
            batches.append(_batch(chunk))
    return pa.Table.from_batches(batches)


def _batch(rows: list[tuple[object, ...]]) -> pa.RecordBatch:
    columns = list(zip(*rows, strict=True))
    return pa.RecordBatch.from_arrays([pa.array(c) for c in columns], names=NAMES)


def adbc_table(url: str) -> pa.Table:
    import adbc_driver_postgresql.dbapi as adbc

    with adbc.connect(url) as con, con.cursor() as cur:
        cur.execute(QUERY)
        return cur.fetch_arrow_table()


def adbc_stream(url: str) -> int:
    import adbc_driver_postgresql.dbapi as adbc

    rows = 0
    with adbc.connect(url) as con, con.cursor() as cur:
        cur.execute(QUERY)
        for batch in cur.fetch_record_batch():
            rows += batch.num_rows
    return rows


def best(fn: Callable[[str], pa.Table | int], url: str, repeats: int) -> tuple[float, float, int]:
    times = []
    n = 0
    for _ in range(repeats):
        t = time.perf_counter()
        got = fn(url)
        times.append(time.perf_counter() - t)
        n = got if isinstance(got, int) else got.num_rows
    return times[0], min(times), n


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--url")
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    cluster = None
    url = args.url
    if url is None:
        sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
        import pg_cluster

        started = pg_cluster.start()
        if isinstance(started, str):
            raise SystemExit(started)
        cluster, url = started, started.url
    try:
        fill(url, args.rows)
        print(f"{args.rows:,} rows, columns {', '.join(NAMES)}; first / best of {args.repeats} (s)\n")
        print("| driver and method | first | best | rows |\n|---|---|---|---|")
        for label, fn in [
            ("ADBC `fetch_arrow_table`", adbc_table),
            ("ADBC `fetch_record_batch` (streamed)", adbc_stream),
            ("psycopg 3, binary COPY, rows to Arrow", psycopg_copy),
            ("psycopg 3, server-side cursor, rows to Arrow", psycopg_cursor),
        ]:
            first, fastest, n = best(fn, url, args.repeats)
            print(f"| {label} | {first:.2f} | {fastest:.2f} | {n:,} |", flush=True)
    finally:
        if cluster is not None:
            cluster.stop()


if __name__ == "__main__":
    main()
