"""Whole runs on DuckDB and on PostgreSQL, stage by stage, on the same rows in the same order.

    python benchmarks/bench_postgres.py [--url postgresql://...] [--clinic-rows 1000000] [--repeats 3]

Inputs: UCI Adult (the 30,162 clean rows of benchmarks/data, the eight QIs of the other Adult
benchmarks, income sensitive) at k = 5 and k = 10, and the clinic table of
examples/make_clinic_db.py (1,000,000 patients, roles from its column comments) at k = 5.
Each is written into a DuckDB file and copied, in order, into PostgreSQL (then VACUUM
ANALYZE, as a table that has been in a database a while); every run goes through
``sbc_sql.anonymize`` in a process of its own, the engines alternating.

Per run it prints the seconds of every stage (``Result.timings``), the share of the run spent
moving rows between the database and Python (the pull of the QIs and the upload of the class
ids), the peak memory of the process (ru_maxrss: the Python side; PostgreSQL's server
processes are not in it) and the total NCP; per input and k, the relative difference of the
two engines' total NCP. The run of median seconds of each (input, k, engine) is reported;
results/postgres.json keeps the figures, results/postgres.md a run read.

Without --url a throwaway cluster is started (tests/pg_cluster.py) and removed afterwards;
with it, the tables adult and patients of that database are replaced.
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import duckdb

sys.path.insert(0, str(Path(__file__).resolve().parent))

import datasets
import record

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent

STAGES = ("plan", "stats", "pull", "cluster", "upload", "write", "verify", "measure")
ADULT = {"qi": datasets.ADULT_QIS_8, "sensitive": ["income"]}
ENGINES = ("DuckDB", "PostgreSQL")


def child(spec: dict[str, object]) -> None:
    """One run, in this process: anonymize, print the figures as one JSON line, drop the
    release again (not timed)."""
    import sbc_sql

    db, table, k, roles = spec["db"], str(spec["table"]), int(spec["k"]), dict(spec["roles"])
    output = f"{table}_k{k}"
    started = time.perf_counter()
    with sbc_sql.anonymize(db, table, k, output=output, **roles) as result:
        seconds = time.perf_counter() - started
        assert result.verdict is not None and result.verdict.ok and result.measures is not None
        figures = {
            "seconds": seconds,
            "stages": dict(result.timings),
            "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0,
            "total_ncp": result.measures.total_ncp,
            "rows": result.measures.n_rows,
            "classes": result.measures.classes,
        }
        # views first, as PostgreSQL asks (spelt out: a build timed for comparison may predate
        # the library's own order)
        for name, kind in ((f"{output}_view", "VIEW"), (output, "VIEW")):
            result.engine.execute(f'DROP {kind} IF EXISTS "{name}"')
        for name in (f"{output}_rows", f"{output}_classes"):
            result.engine.execute(f'DROP TABLE IF EXISTS "{name}"')
    print(json.dumps(figures))


def in_own_process(argument: str, spec: dict[str, object], doing: str) -> object:
    """This script run again in a process of its own with ``argument`` and ``spec``: the JSON
    its last line prints. Each run gets a fresh process, so that its peak memory is its own."""
    done = subprocess.run(
        [sys.executable, __file__, argument, json.dumps(spec)],
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode != 0:
        raise SystemExit(f"{doing} failed:\n{done.stderr[-2000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def run(db: str, table: str, k: int, roles: dict[str, list[str]]) -> dict[str, object]:
    spec = {"db": db, "table": table, "k": k, "roles": roles}
    figures = in_own_process("--child", spec, f"run ({table}, k={k}, {db.split('@')[-1]})")
    assert isinstance(figures, dict)
    return figures


def prepare_inputs(folder: Path, url: str, clinic_rows: int, tables: list[str]) -> tuple[str, dict[str, int]]:
    """``tables`` (adult, patients) in a DuckDB file and copied in order into PostgreSQL (any
    table of those names there is replaced); their row counts."""
    sys.path.insert(0, str(ROOT / "tests"))
    import adbc_driver_postgresql.dbapi as adbc
    from helpers import load_example, to_postgres

    path = folder / "bench.duckdb"
    if "patients" in tables:
        load_example("examples/make_clinic_db.py").make_clinic_db(path, clinic_rows, 7)
    with duckdb.connect(str(path)) as con:
        if "adult" in tables:
            datasets.load_adult(con, "adult", columns=[*datasets.ADULT_QIS_8, "income"])
        counts = {t: int(con.execute(f"SELECT count(*) FROM {t}").fetchall()[0][0]) for t in tables}
        with adbc.connect(url, autocommit=True) as pg, pg.cursor() as cur:
            for table in tables:
                cur.execute(f"DROP TABLE IF EXISTS {table}")
        for table in tables:
            to_postgres(con, table, url)
    with adbc.connect(url, autocommit=True) as pg, pg.cursor() as cur:
        for table in tables:
            cur.execute(f"VACUUM ANALYZE {table}")
    return str(path), counts


def prepared(folder: Path, url: str, clinic_rows: int, tables: list[str]) -> tuple[Path, dict[str, int]]:
    """prepare_inputs in a process of its own: each run's process is forked from this one,
    and the peak memory a process reports counts what it was forked from, so this one stays
    small."""
    asked = {"folder": str(folder), "url": url, "rows": clinic_rows, "tables": tables}
    path, counts = in_own_process("--prepare", asked, "preparing the inputs")  # type: ignore[misc]
    return Path(path), counts


def median_run(runs: list[dict[str, object]]) -> dict[str, object]:
    ordered = sorted(runs, key=lambda r: float(r["seconds"]))
    chosen = dict(ordered[len(ordered) // 2])
    chosen["runs_seconds"] = [round(float(r["seconds"]), 3) for r in runs]
    return chosen


def moving_share(r: dict[str, object]) -> float:
    stages: dict[str, float] = r["stages"]
    return (stages.get("pull", 0.0) + stages.get("upload", 0.0)) / float(r["seconds"])


def table_lines(results: list[dict[str, object]]) -> list[str]:
    head = " | ".join(STAGES)
    lines = [
        f"| input | k | engine | seconds | {head} | moving rows | peak MB | total NCP |",
        "|---|---|---|---|" + "---|" * len(STAGES) + "---|---|---|",
    ]
    for r in results:
        stages: dict[str, float] = r["stages"]
        cells = " | ".join(f"{stages[s]:.2f}" if s in stages else "-" for s in STAGES)
        lines.append(
            f"| {r['input']} | {r['k']} | {r['engine']} | {float(r['seconds']):.2f} | {cells} | "
            f"{100 * moving_share(r):.0f} % | {float(r['peak_rss_mb']):.0f} | "
            f"{float(r['total_ncp']):.15f} |"
        )
    return lines


def agreement_lines(results: list[dict[str, object]]) -> list[str]:
    lines = [
        "| input | k | DuckDB total NCP | PostgreSQL total NCP | relative difference |",
        "|---|---|---|---|---|",
    ]
    by = {(r["input"], r["k"], r["engine"]): float(r["total_ncp"]) for r in results}
    for name, k in dict.fromkeys((r["input"], r["k"]) for r in results):
        duck, pg = by.get((name, k, "DuckDB")), by.get((name, k, "PostgreSQL"))
        if duck is None or pg is None:
            continue
        rel = abs(pg - duck) / abs(duck) if duck else abs(pg)
        lines.append(f"| {name} | {k} | {duck:.15f} | {pg:.15f} | {rel:.1e} |")
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--url")
    parser.add_argument("--clinic-rows", type=int, default=1_000_000)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument(
        "--only", choices=("adult", "patients"), help="one input (e.g. to time another build of sbc_sql)"
    )
    parser.add_argument("--engine", choices=ENGINES, help="one engine")
    parser.add_argument("--no-record", action="store_true", help="print only; leave results/postgres.json")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    parser.add_argument("--prepare", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(json.loads(args.child))
        return
    if args.prepare:
        asked = json.loads(args.prepare)
        print(json.dumps(prepare_inputs(Path(asked["folder"]), asked["url"], asked["rows"], asked["tables"])))
        return
    cluster = None
    url = args.url
    if url is None:
        sys.path.insert(0, str(ROOT / "tests"))
        import pg_cluster

        started = pg_cluster.start()
        if isinstance(started, str):
            raise SystemExit(started)
        cluster, url = started, started.url
    try:
        with tempfile.TemporaryDirectory() as tmp:
            inputs = [("adult", k, ADULT) for k in (5, 10)] + [("patients", 5, {})]
            inputs = [i for i in inputs if args.only in (None, i[0])]
            tables = list(dict.fromkeys(i[0] for i in inputs))
            path, counts = prepared(Path(tmp), url, args.clinic_rows, tables)
            results = []
            for table, k, roles in inputs:
                label = f"{'Adult' if table == 'adult' else 'clinic'} {counts[table]:,}"
                runs: dict[str, list[dict[str, object]]] = {e: [] for e in ENGINES}
                for _ in range(args.repeats):
                    for engine, db in (("DuckDB", str(path)), ("PostgreSQL", url)):
                        if args.engine and engine != args.engine:
                            continue
                        runs[engine].append(run(db, table, k, roles))
                for engine in ENGINES:
                    if runs[engine]:
                        chosen = median_run(runs[engine])
                        results.append({"input": label, "k": k, "engine": engine, **chosen})
                        print(table_lines(results[-1:])[-1], flush=True)
        import adbc_driver_postgresql.dbapi as adbc

        with adbc.connect(url, autocommit=True) as pg, pg.cursor() as cur:
            cur.execute("SELECT current_setting('server_version')")
            server = str(cur.fetchone()[0])
    finally:
        if cluster is not None:
            cluster.stop()
    print(f"\nPostgreSQL {server}; median of {args.repeats} run(s) each, seconds\n")
    print("\n".join(table_lines(results)))
    print()
    print("\n".join(agreement_lines(results)))
    if not args.no_record:
        record.write("postgres", {"postgresql": server, "repeats": args.repeats, "runs": results})


if __name__ == "__main__":
    main()
