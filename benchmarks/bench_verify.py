"""The verify stage against the whole run, on DuckDB and PostgreSQL, for two builds of sbc_sql.

    python benchmarks/bench_verify.py --build before=/path/to/old/checkout --build after=. \
        [--rows 1000000] [--repeats 3] [--engines duckdb,postgresql]

Input: the synthetic population of datasets.py (1,000,000 rows by default, person_id an
identifier, diagnosis sensitive), written into a DuckDB file and copied, in order, into a
throwaway PostgreSQL cluster (tests/pg_cluster.py; VACUUM ANALYZE after). Each run is a
whole ``sbc-sql anonymize --json`` process at k = 10, alone and with ``--l-diversity 3``,
the builds alternating within each repeat so that both see the same load (each build's
first, untimed run compiles its kernels). Per (engine,
options, build) the median of the repeats is reported: the verify stage's seconds (from the
``--json`` timings), the sum of every stage's seconds and the process's wall seconds, with
every run's figures beside. Figures go to results/<--out>.json.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import duckdb

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(ROOT / "tests"))

import datasets  # noqa: E402

OPTIONS = {"k=10": [], "k=10, l=3": ["--l-diversity", "3"]}


def prepare(folder: Path, rows: int, url: str | None) -> Path:
    path = folder / "bench.duckdb"
    with duckdb.connect(str(path)) as con:
        datasets.make_synthetic(con, "synthetic", rows)
        if url is not None:
            import adbc_driver_postgresql.dbapi as adbc
            from helpers import to_postgres

            with adbc.connect(url, autocommit=True) as pg, pg.cursor() as cur:
                cur.execute("DROP TABLE IF EXISTS synthetic")
            to_postgres(con, "synthetic", url)
            with adbc.connect(url, autocommit=True) as pg, pg.cursor() as cur:
                cur.execute("VACUUM ANALYZE synthetic")
    return path


def one_run(build: Path, db: str, options: list[str]) -> dict[str, object]:
    cmd = [sys.executable, "-m", "sbc_sql", "anonymize", "--db", db, "--table", "synthetic", "--k", "10"]
    cmd += [*options, "--output", "synthetic_k10", "--replace", "--json"]
    env = dict(os.environ, PYTHONPATH=str(build))
    started = time.perf_counter()
    done = subprocess.run(cmd, capture_output=True, text=True, env=env, cwd=str(build))
    wall = time.perf_counter() - started
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)} exited {done.returncode}: {done.stderr[-2000:]}")
    summary = json.loads(done.stdout)
    assert summary["ok"] is True, summary
    stages = {k: float(v) for k, v in summary["seconds"].items()}
    return {
        "verify": stages.get("verify", 0.0),
        "stages_total": sum(stages.values()),
        "wall": wall,
        "stages": stages,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--build", action="append", required=True, help="label=checkout (repeatable)")
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--engines", default="duckdb,postgresql")
    parser.add_argument("--out", default="verify_pass")
    args = parser.parse_args()
    builds = {label: Path(path).resolve() for label, path in (b.split("=", 1) for b in args.build)}
    engines = args.engines.split(",")
    cluster = None
    url = None
    if "postgresql" in engines:
        import pg_cluster

        started = pg_cluster.start()
        if isinstance(started, str):
            raise SystemExit(started)
        cluster, url = started, started.url
    runs: dict[str, list[dict[str, object]]] = {}
    try:
        with tempfile.TemporaryDirectory() as tmp:
            path = prepare(Path(tmp), args.rows, url)
            dbs = {"duckdb": str(path), "postgresql": url}
            for build in builds.values():
                # untimed: the first process of a build compiles the clustering's kernels
                one_run(build, str(path), [])
            for repeat in range(args.repeats):
                for engine in engines:
                    for name, options in OPTIONS.items():
                        for label, build in builds.items():
                            figures = one_run(build, str(dbs[engine]), options)
                            key = f"{engine}|{name}|{label}"
                            runs.setdefault(key, []).append(figures)
                            print(
                                f"[{repeat + 1}] {key}: verify {figures['verify']:.2f} s, "
                                f"stages {figures['stages_total']:.2f} s, wall {figures['wall']:.2f} s "
                                f"(load {os.getloadavg()[0]:.1f})",
                                flush=True,
                            )
    finally:
        if cluster is not None:
            cluster.stop()
    summary = []
    for key, done in runs.items():
        engine, name, label = key.split("|")
        summary.append(
            {
                "engine": engine,
                "options": name,
                "build": label,
                "verify": statistics.median(float(r["verify"]) for r in done),
                "stages_total": statistics.median(float(r["stages_total"]) for r in done),
                "wall": statistics.median(float(r["wall"]) for r in done),
                "runs": done,
            }
        )
        s = summary[-1]
        print(
            f"{key}: median verify {s['verify']:.2f} s, "
            f"stages {s['stages_total']:.2f} s, wall {s['wall']:.2f} s"
        )
    out = HERE / "results" / f"{args.out}.json"
    document = {"rows": args.rows, "repeats": args.repeats, "cores": os.cpu_count(), "results": summary}
    out.write_text(json.dumps(document, indent=1) + "\n")
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
