"""Privacy criteria at scale: k alone, l = 3, t = 0.2 and beta = 2 on DuckDB, PostgreSQL and Spark.

    python benchmarks/bench_scale_criteria.py [--rows 1000000 10000000] [--k 10]
        [--engines duckdb,postgres,spark,cluster1,cluster2] [--criteria k,l,t,beta]
        [--postgres-rows 1000000] [--sample 100000] [--verify] [--no-record]

Input: the clinic table of examples/make_clinic_db.py (QIs birth_date, age, zip, sex,
nationality; diagnosis sensitive, whose shares go with age), one Parquet file per size, as
benchmarks/bench_spark.py writes it. Every run is one call of ``sbc_sql.anonymize`` in a
process of its own, verified as every release is: DuckDB in memory reading the file;
PostgreSQL (only at ``--postgres-rows``) from a table copied into a throwaway server (the
bench starts it as tests/pg_cluster.py does); Spark on ``local[2]`` (``spark``) and on
``local-cluster[n,1,1024]`` with one and two executor JVMs (``cluster1``, ``cluster2``),
reading the file and writing a Parquet folder.

Per run: seconds, the peak resident memory of each kind of process (the Python process that
runs sbc-sql, Spark's JVMs, Spark's Python workers, PostgreSQL's server processes), the total
NCP, the suppressed rows, and the clustering's detail line. With ``--sample N`` the first N
rows are also run exactly (``mode="exact"``, one block) on DuckDB for t and beta: the NCP
that the blocks' figure at full size is compared with (at most 10 % above). Each figure
beside the same engine's k-alone run of the same size: the targets are ratios. With
``--verify`` each k-alone release is then checked by ``sbc_sql.verify`` in the same process,
as an auditor checks it (``sbc-sql verify``: the roles and provenance read back, the views
checked too), and its seconds reported beside the same engine's DuckDB figure (the clinic
table's birth_date is a DATE QI of some 30,000 distinct values).
results/scale_criteria.json keeps the figures, results/scale_criteria.md a run read (``--name``
names them otherwise).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import bench_spark
import record

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent

ROLES = bench_spark.ROLES
#: each criterion as the API takes it, by the name --criteria takes
CRITERIA: dict[str, dict[str, float]] = {
    "k": {},
    "l": {"l_diversity": 3},
    "t": {"t_closeness": 0.2},
    "beta": {"beta_likeness": 2.0},
}
LABELS = {"k": "k alone", "l": "l = 3", "t": "t = 0.2", "beta": "beta = 2"}
#: Spark masters by the name --engines takes
MASTERS = {"spark": "local[2]", "cluster1": "local-cluster[1,1,1024]", "cluster2": "local-cluster[2,1,1024]"}
ENGINE_LABELS = {
    "duckdb": "DuckDB",
    "postgres": "PostgreSQL",
    "spark": "Spark local[2]",
    "cluster1": "Spark local-cluster, 1 executor",
    "cluster2": "Spark local-cluster, 2 executors",
}


class Sampler(bench_spark.Sampler):
    """bench_spark's sampler, with PostgreSQL's server processes (not this process's
    children) as one more kind, sampled for a run on PostgreSQL only (the machine may run
    other servers)."""

    def __init__(self, server: bool) -> None:
        super().__init__()
        self.peak["server"] = 0.0
        self.server = server

    def sample(self) -> None:
        super().sample()
        if not self.server:
            return
        total = 0.0
        for entry in os.listdir("/proc"):
            if not entry.isdigit():
                continue
            try:
                with open(f"/proc/{entry}/comm", encoding="ascii", errors="replace") as fh:
                    name = fh.read().strip()
            except OSError:
                continue
            if name == "postgres":
                total += bench_spark._rss(int(entry))
        self.peak["server"] = max(self.peak["server"], total)


def child(spec: dict[str, object]) -> None:
    """One run in this process; its figures as one JSON line."""
    import sbc_sql

    engine, k = str(spec["engine"]), int(spec["k"])
    criteria = CRITERIA[str(spec["criterion"])]
    lines: list[str] = []
    with Sampler(engine == "postgres") as sampler, tempfile.TemporaryDirectory() as out:
        started = time.perf_counter()
        table: str = str(spec["path"])
        if engine in MASTERS:
            from sbc_sql.engines.spark import SparkEngine

            db = SparkEngine.connect(master=MASTERS[engine])
            output = str(Path(out) / "release")
        elif engine == "postgres":
            db, table, output = spec["url"], "patients", "release"
        else:
            import duckdb

            db, output = duckdb.connect(), "release"
            if spec.get("verify"):
                # an auditor verifies against a table (a path is read as it is only by a run)
                db.execute("CREATE TABLE patients AS SELECT * FROM read_parquet($1)", [table])
                table = "patients"
        kwargs = {"mode": spec["mode"]} if spec.get("mode") else {}
        with sbc_sql.anonymize(
            db, table, k, output=output, replace=True, log=lines.append, **ROLES, **criteria, **kwargs
        ) as result:
            seconds = time.perf_counter() - started
            assert result.verdict is not None and result.verdict.ok and result.measures is not None
            if spec.get("verify"):
                begun = time.perf_counter()
                verdict = sbc_sql.verify(db, table, output, k, **ROLES, **criteria)
                assert verdict.ok, verdict.problems
                verified = time.perf_counter() - begun
            figures = {
                "seconds": seconds,
                "stages": dict(result.timings),
                "total_ncp": result.measures.total_ncp,
                "rows": result.measures.n_rows,
                "suppressed": result.measures.suppressed,
                "classes": result.measures.classes,
                "clustering": next((x for x in lines if x.startswith("clustering: ")), ""),
            }
            if spec.get("verify"):
                figures["verify_seconds"] = verified
        if engine in MASTERS:
            db.close()
    figures["peak_mb"] = sampler.peak
    print(json.dumps(figures))


def run(spec: dict[str, object]) -> dict[str, object]:
    """One run in a process of its own: its figures, or the error it failed with."""
    started = time.perf_counter()
    done = subprocess.run(
        [sys.executable, __file__, "--child", json.dumps(spec)], capture_output=True, text=True, check=False
    )
    if done.returncode != 0:
        errors = [line for line in done.stderr.splitlines() if "Error" in line]
        failed = errors[-1] if errors else done.stderr[-300:]
        return {"failed": failed, "seconds": time.perf_counter() - started}
    return json.loads(done.stdout.strip().splitlines()[-1])


def load_postgres(path: Path, url: str) -> None:
    """The Parquet file as the table patients of the server at ``url`` (replaced), analyzed."""
    sys.path.insert(0, str(ROOT / "tests"))
    import adbc_driver_postgresql.dbapi as adbc
    import duckdb
    from helpers import to_postgres

    with duckdb.connect() as con:
        con.execute(f"CREATE TABLE patients AS SELECT * FROM read_parquet('{path}')")
        with adbc.connect(url, autocommit=True) as pg, pg.cursor() as cur:
            cur.execute("DROP TABLE IF EXISTS patients")
        to_postgres(con, "patients", url)
    with adbc.connect(url, autocommit=True) as pg, pg.cursor() as cur:
        cur.execute("VACUUM ANALYZE patients")


def sample_file(path: Path, rows: int, into: Path) -> None:
    """The first ``rows`` rows of a Parquet file as another."""
    import pyarrow.parquet as pq

    table = pq.read_table(path).slice(0, rows)
    pq.write_table(table, into, row_group_size=131_072)


def verify_lines(results: list[dict[str, object]]) -> list[str]:
    """The standalone verifications (--verify): seconds, and the ratio to DuckDB's of the
    same size."""
    timed = [r for r in results if "verify_seconds" in r]
    if not timed:
        return []
    duck = {r["rows_in"]: float(r["verify_seconds"]) for r in timed if r.get("engine") == "duckdb"}
    lines = ["| rows | engine | standalone verify s | x DuckDB |", "|---|---|---|---|"]
    for r in timed:
        base = duck.get(r["rows_in"])
        ratio = "-" if base is None else f"{float(r['verify_seconds']) / base:.2f}"
        lines.append(
            f"| {int(r['rows_in']):,} | {r['engine_label']} | {float(r['verify_seconds']):.1f} | {ratio} |"
        )
    return [*lines, ""]


def table_lines(results: list[dict[str, object]]) -> list[str]:
    lines = [
        "| rows | engine | criterion | seconds | x k alone | Python MB | JVM MB | workers MB | server MB "
        "| total NCP | suppressed |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in results:
        head = f"| {int(r['rows_in']):,} | {r['engine_label']} | {r['label']} |"
        if "failed" in r:
            lines.append(f"{head} failed after {float(r['seconds']):.0f} s: {r['failed']} |")
            continue
        peak: dict[str, float] = r["peak_mb"]
        ratio = r.get("x_k_alone")
        lines.append(
            f"{head} {float(r['seconds']):.1f} | {'-' if ratio is None else f'{ratio:.2f}'} | "
            f"{peak['python']:.0f} | {peak['jvm']:.0f} | {peak['workers']:.0f} | {peak['server']:.0f} | "
            f"{float(r['total_ncp']):.4f} | {int(r['suppressed']):,} |"
        )
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, nargs="+", default=[1_000_000, 10_000_000])
    parser.add_argument("--k", type=int, default=10)
    parser.add_argument("--engines", default="duckdb,postgres,spark,cluster1,cluster2")
    parser.add_argument("--criteria", default="k,l,t,beta")
    parser.add_argument("--postgres-rows", type=int, default=1_000_000, help="the one size PostgreSQL runs")
    parser.add_argument("--sample", type=int, default=100_000, help="exact rows for t, beta (0: none)")
    parser.add_argument("--verify", action="store_true", help="time sbc_sql.verify of each k-alone release")
    parser.add_argument("--no-record", action="store_true", help="print only; leave the results files")
    parser.add_argument("--name", default="scale_criteria", help="the results files' name")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(json.loads(args.child))
        return
    engines = [e for e in args.engines.split(",") if e]
    criteria = [c for c in args.criteria.split(",") if c]
    unknown = [e for e in engines if e not in ENGINE_LABELS] + [c for c in criteria if c not in CRITERIA]
    if unknown:
        raise SystemExit(f"unknown engine or criterion: {', '.join(unknown)}")
    results: list[dict[str, object]] = []
    cluster = None
    url = None
    if "postgres" in engines:
        sys.path.insert(0, str(ROOT / "tests"))
        import pg_cluster

        started = pg_cluster.start()
        if isinstance(started, str):
            raise SystemExit(started)
        cluster, url = started, started.url
    try:
        with tempfile.TemporaryDirectory() as tmp:
            for rows in args.rows:
                path = Path(tmp) / f"clinic_{rows}.parquet"
                bench_spark.make_input(path, rows)
                print(f"{rows:,} rows: {path.stat().st_size / 2**20:.0f} MB of Parquet", flush=True)
                if args.sample and args.sample < rows and rows == min(args.rows):
                    part = Path(tmp) / f"clinic_{args.sample}.parquet"
                    sample_file(path, args.sample, part)
                    for c in [c for c in criteria if c in ("t", "beta")]:
                        exact = {"engine": "duckdb", "path": str(part), "k": args.k, "mode": "exact"}
                        figures = run({**exact, "criterion": c})
                        results.append(
                            {
                                "rows_in": args.sample,
                                "engine_label": "DuckDB, exact (one block)",
                                "label": LABELS[c],
                                "criterion": c,
                                **figures,
                            }
                        )
                        print(table_lines(results[-1:])[-1], flush=True)
                for engine in engines:
                    if engine == "postgres":
                        if rows != args.postgres_rows:
                            continue
                        load_postgres(path, str(url))
                    alone = None
                    for c in criteria:
                        spec = {"engine": engine, "path": str(path), "k": args.k, "criterion": c, "url": url}
                        spec["verify"] = args.verify and c == "k"
                        figures = run(spec)
                        if c == "k" and "failed" not in figures:
                            alone = float(figures["seconds"])
                        entry = {
                            "rows_in": rows,
                            "engine": engine,
                            "engine_label": ENGINE_LABELS[engine],
                            "label": LABELS[c],
                            "criterion": c,
                            **figures,
                        }
                        if alone and "failed" not in figures:
                            entry["x_k_alone"] = float(figures["seconds"]) / alone
                        results.append(entry)
                        print(table_lines(results[-1:])[-1], flush=True)
                        if figures.get("clustering"):
                            print("   ", figures["clustering"], flush=True)
                path.unlink()
    finally:
        if cluster is not None:
            cluster.stop()
    lines = [
        "# Privacy criteria at scale",
        "",
        f"Written by benchmarks/bench_scale_criteria.py; k = {args.k}; one run each; clinic table.",
        "",
        *table_lines(results),
        "",
        *verify_lines(results),
    ]
    print("\n".join(lines))
    if not args.no_record:
        record.write(args.name, {"k": args.k, "results": results})
        record.path(args.name).with_suffix(".md").write_text("\n".join(lines), encoding="utf-8")


if __name__ == "__main__":
    main()
