"""Whole runs on DuckDB and on Apache Spark (local[2]), stage by stage, on the same Parquet file.

    python benchmarks/bench_spark.py [--rows 1000000 10000000] [--k 5] [--small-memory 10000000]
        [--small-memory-size 768m]

Input: the clinic table of examples/make_clinic_db.py (QIs birth_date, age, zip, sex,
nationality; diagnosis sensitive; the direct identifiers left out), written as one Parquet
file of row groups of 131,072 rows, a million rows at a time (seeds 7, 8, ...). Every run is
one call of ``sbc_sql.anonymize`` in a process of its own: DuckDB in memory reading the
file, Spark on ``local[2]`` with its default driver memory (1 GB) writing a Parquet folder.
With ``--small-memory N`` the N-row input runs once more with ``spark.driver.memory`` of
``--small-memory-size`` (default 768m: Spark's unified memory for execution and storage is
then (768 - 300) x 0.6 = 281 MB, for a table whose decoded rows take 522 MB at 10,000,000
rows), so the input's cache, the shuffles and the sorts spill to disk while the clustering
streams one block at a time through the workers. A run that fails is recorded with the
error it ended with, and the others go on.

Per run: the seconds of every stage (``Result.timings``), the peak resident memory of the
run's processes, sampled every 0.2 s: the Python process that runs sbc-sql (for DuckDB
that is the whole engine), Spark's JVM, and its Python workers (the sum of their
resident sizes at the sampled moment of their largest sum), the total NCP, and for Spark
the line that says how the clustering ran. results/spark.json keeps the figures,
results/spark.md a run read.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import record

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent

STAGES = ("plan", "stats", "pull", "cluster", "upload", "write", "verify", "measure")
ROLES = {"qi": ["birth_date", "age", "zip", "sex", "nationality"], "sensitive": ["diagnosis"]}
CHUNK = 1_000_000
PAGE = os.sysconf("SC_PAGE_SIZE")


def make_input(path: Path, rows: int) -> int:
    """The clinic rows as one Parquet file; returns their size decoded (Arrow bytes, strings
    as plain strings rather than dictionaries)."""
    import importlib.util

    import pyarrow as pa
    import pyarrow.parquet as pq

    spec = importlib.util.spec_from_file_location("make_clinic_db", ROOT / "examples" / "make_clinic_db.py")
    clinic = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(clinic)
    columns = [*ROLES["qi"], *ROLES["sensitive"]]
    decoded = 0
    writer = None
    try:
        for start in range(0, rows, CHUNK):
            table = clinic.patients_source(min(CHUNK, rows - start), 7 + start // CHUNK).select(columns)
            if writer is None:
                writer = pq.ParquetWriter(path, table.schema)
            writer.write_table(table, row_group_size=131_072)
            plain = pa.table(
                {
                    c: table[c].cast(pa.string()) if pa.types.is_dictionary(table[c].type) else table[c]
                    for c in columns
                }
            )
            decoded += plain.nbytes
    finally:
        if writer is not None:
            writer.close()
    return decoded


class Sampler:
    """Peak resident memory of this process and of everything it started, by kind."""

    def __init__(self) -> None:
        self.peak = {"python": 0.0, "jvm": 0.0, "workers": 0.0}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def __enter__(self) -> Sampler:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.sample()
        self._stop.set()
        self._thread.join()

    def _run(self) -> None:
        while not self._stop.wait(0.2):
            self.sample()

    def sample(self) -> None:
        parents: dict[int, int] = {}
        names: dict[int, str] = {}
        for entry in os.listdir("/proc"):
            if not entry.isdigit():
                continue
            try:
                with open(f"/proc/{entry}/stat", encoding="ascii", errors="replace") as fh:
                    stat = fh.read()
            except OSError:
                continue
            name = stat[stat.index("(") + 1 : stat.rindex(")")]
            parents[int(entry)] = int(stat[stat.rindex(")") + 2 :].split()[1])
            names[int(entry)] = name
        me = os.getpid()
        now = {"python": _rss(me), "jvm": 0.0, "workers": 0.0}
        for pid in parents:
            if pid == me or not _descends(pid, me, parents):
                continue
            kind = "jvm" if names[pid] == "java" else "workers"
            now[kind] += _rss(pid)
        for kind, mb in now.items():
            self.peak[kind] = max(self.peak[kind], mb)


def _descends(pid: int, ancestor: int, parents: dict[int, int]) -> bool:
    while pid in parents and pid > 1:
        pid = parents[pid]
        if pid == ancestor:
            return True
    return False


def _rss(pid: int) -> float:
    try:
        with open(f"/proc/{pid}/statm", encoding="ascii") as fh:
            return int(fh.read().split()[1]) * PAGE / 2**20
    except (OSError, IndexError, ValueError):
        return 0.0


def child(spec: dict[str, object]) -> None:
    """One run in this process; its figures as one JSON line."""
    import sbc_sql

    engine, path, k = str(spec["engine"]), str(spec["path"]), int(spec["k"])
    lines: list[str] = []
    with Sampler() as sampler, tempfile.TemporaryDirectory() as out:
        started = time.perf_counter()
        if engine == "spark":
            from sbc_sql.engines.spark import SparkEngine

            db = SparkEngine.connect(master="local[2]", conf=dict(spec.get("conf") or {}))
            output = str(Path(out) / "release")
        else:
            import duckdb

            db, output = duckdb.connect(), "release"
        with sbc_sql.anonymize(db, path, k, output=output, log=lines.append, **ROLES) as result:
            seconds = time.perf_counter() - started
            assert result.verdict is not None and result.verdict.ok and result.measures is not None
            figures = {
                "seconds": seconds,
                "stages": dict(result.timings),
                "total_ncp": result.measures.total_ncp,
                "rows": result.measures.n_rows,
                "classes": result.measures.classes,
                "smallest": result.measures.smallest,
                "clustering": next((x for x in lines if x.startswith("clustering: ")), ""),
            }
        if engine == "spark":
            db.close()
    figures["peak_mb"] = sampler.peak
    print(json.dumps(figures))


def run(engine: str, path: Path, k: int, conf: dict[str, str] | None = None) -> dict[str, object]:
    """One run in a process of its own: its figures, or the error it failed with."""
    spec = {"engine": engine, "path": str(path), "k": k, "conf": conf or {}}
    started = time.perf_counter()
    done = subprocess.run(
        [sys.executable, __file__, "--child", json.dumps(spec)], capture_output=True, text=True, check=False
    )
    if done.returncode != 0:
        errors = [line for line in done.stderr.splitlines() if "Error" in line]
        return {
            "failed": errors[-1] if errors else done.stderr[-300:],
            "seconds": time.perf_counter() - started,
        }
    return json.loads(done.stdout.strip().splitlines()[-1])


def table_lines(results: list[dict[str, object]]) -> list[str]:
    head = " | ".join(STAGES)
    lines = [
        f"| rows | engine | seconds | {head} | Python MB | JVM MB | workers MB | total NCP |",
        "|---|---|---|" + "---|" * len(STAGES) + "---|---|---|---|",
    ]
    for r in results:
        if "failed" in r:
            lines.append(
                f"| {r['rows']:,} | {r['engine']} | failed after {float(r['seconds']):.0f} s: {r['failed']} |"
            )
            continue
        stages: dict[str, float] = r["stages"]
        peak: dict[str, float] = r["peak_mb"]
        cells = " | ".join(f"{stages[s]:.1f}" if s in stages else "-" for s in STAGES)
        lines.append(
            f"| {int(r['rows']):,} | {r['engine']} | {float(r['seconds']):.1f} | {cells} | "
            f"{peak['python']:.0f} | {peak['jvm']:.0f} | {peak['workers']:.0f} | "
            f"{float(r['total_ncp']):.6f} |"
        )
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, nargs="+", default=[1_000_000, 10_000_000])
    parser.add_argument("--k", type=int, default=5)
    parser.add_argument("--small-memory", type=int, help="run this input again with little driver memory")
    parser.add_argument("--small-memory-size", default="768m", help="that driver memory (default 768m)")
    parser.add_argument("--no-record", action="store_true", help="print only; leave results/spark.json")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(json.loads(args.child))
        return
    results = []
    decoded: dict[int, int] = {}
    with tempfile.TemporaryDirectory() as tmp:
        for rows in args.rows:
            path = Path(tmp) / f"clinic_{rows}.parquet"
            decoded[rows] = make_input(path, rows)
            print(
                f"{rows:,} rows: {path.stat().st_size / 2**20:.0f} MB of Parquet, "
                f"{decoded[rows] / 2**20:.0f} MB decoded",
                flush=True,
            )
            settings = [("DuckDB", "duckdb", None), ("Spark local[2]", "spark", None)]
            if args.small_memory == rows:
                size = args.small_memory_size
                settings.append((f"Spark local[2], {size}", "spark", {"spark.driver.memory": size}))
            for label, engine, conf in settings:
                figures = run(engine, path, args.k, conf)
                results.append(
                    {"engine": label, "k": args.k, "rows": rows, "input_mb": decoded[rows] / 2**20, **figures}
                )
                print(table_lines(results[-1:])[-1], flush=True)
                if figures.get("clustering"):
                    print("   ", figures["clustering"], flush=True)
            path.unlink()
    print(f"\nk = {args.k}; one run each, seconds\n")
    print("\n".join(table_lines(results)))
    if not args.no_record:
        import pyspark

        record.write("spark", {"k": args.k, "pyspark": pyspark.__version__, "runs": results})


if __name__ == "__main__":
    main()
