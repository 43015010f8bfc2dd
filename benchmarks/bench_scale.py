"""Scale benchmark: whole `sbc-sql anonymize` processes on Adult, replicated Adult and
synthetic populations, each figure beside its target.

For each input one run records: rows, distinct QI tuples, seconds per stage (the release's
timings), the whole process's seconds (the median of several processes where one takes
under 10 s), its peak RSS, total NCP, and the run's time over a plain DuckDB ``GROUP BY`` of
all QIs of the same table timed in the same run (the floor set by the database itself). A
generated input's process runs under ``watched.py``, which also records the peak of DuckDB's
own memory (its buffer manager's, part of the process's RSS) and of what it spilled to disk.
Every process must exit 0 with a verified release. A whole process is what a user waits
for, and its own peak memory is read from the kernel when it ends (``wait4``), so each input
is measured alone. The inputs:

- ``adult``: UCI Adult, 30,162 rows x 8 QIs, in Python (after a warm-up) and as processes;
- ``adult33``: Adult replicated 33 times with ages shifted: many rows per distinct tuple;
- ``adult1m_growing``, ``adult3m_growing``: noised replicas of Adult whose distinct tuples
  keep growing with the rows (the 1M table is a prefix of the 3M one);
- ``synthetic1m``, ``synthetic10m``, ``synthetic100m``: the synthetic population, almost
  every row distinct (the same seeded population: each table is a prefix of the next),
  generated into the database a million rows at a time; above ``--held-rows``' default of
  1,000,000 rows a run streams them from DuckDB, whose memory is capped per input
  (``MEMORY_LIMITS``);
- ``ncp``: total NCP on Adult at k = 2..100, beside the figures of results/utility.json.

Figures go to results/scale.json and scale.md, from which report.py renders the tables of
benchmarks/README.md. A run of some inputs (``--only``) replaces those in scale.json and
keeps the others. ``--before`` also records the run as results/scale_before.json, the
figures later runs are shown against.

    python benchmarks/bench_scale.py                        # every input but 100M (about 6 minutes)
    python benchmarks/bench_scale.py --only synthetic100m   # 100,000,000 rows (about 20 minutes)
    python benchmarks/bench_scale.py --only adult,adult33   # a quick check
    python benchmarks/bench_scale.py --before               # every input, kept as the baseline
    python benchmarks/bench_scale.py --utility              # blocks vs exact NCP at 30k / 200k
    SBC_BENCH_MEMORY=20GB python benchmarks/bench_scale.py  # another DuckDB memory cap
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import duckdb

sys.path.insert(0, str(Path(__file__).resolve().parent))
# the installed sbc_sql first (its kernels are compiled at install); else the checkout
sys.path.append(str(Path(__file__).resolve().parents[1]))

import datasets
import record
import report

import sbc_sql
from sbc_sql.cluster.sbca_plus import compiled

RESULTS = Path(__file__).resolve().parent / "results"
# DuckDB's memory cap for the generated tables (as `--memory-limit` does): its joins and
# sorts spill to disk beyond it; DuckDB runs in the process, so its memory is part of the
# process's peak RSS
MEMORY_LIMIT = os.environ.get("SBC_BENCH_MEMORY", "3GB")
#: the cap of the inputs whose targets bound the process's peak RSS: DuckDB's share of it
MEMORY_LIMITS = {"synthetic10m": "1GB", "synthetic100m": "4GB"}
#: the driver that runs a command and watches DuckDB's own memory
WATCHED = Path(__file__).resolve().parent / "watched.py"
#: processes (and in-Python runs on Adult) timed per input; the median is reported
RUNS = 5
#: an input whose first process takes longer is timed once: its spread is small beside it
REPEAT_UNDER_SECONDS = 10.0
#: GROUP BY queries timed per input, the median taken
FLOOR_RUNS = 3
#: the k of the NCP curve on Adult, those of results/utility.json
NCP_KS = (2, 5, 10, 25, 50, 100)
ADULT_ROWS = 30162
SYNTH_DROP = [datasets.SYNTH_IDENTIFIER]


def median(values: list[float]) -> float:
    ordered = sorted(values)
    return ordered[len(ordered) // 2]


def group_by_floor(con: duckdb.DuckDBPyConnection, table: str, qis: list[str]) -> float:
    """The median seconds of FLOOR_RUNS ``GROUP BY`` queries over all QIs."""
    cols = ", ".join(f'"{q}"' for q in qis)
    times = []
    for _ in range(FLOOR_RUNS):
        t = time.perf_counter()
        con.execute(f'SELECT COUNT(*) FROM (SELECT {cols}, COUNT(*) FROM "{table}" GROUP BY {cols})')
        con.fetchall()
        times.append(time.perf_counter() - t)
    return median(times)


def shape(con: duckdb.DuckDBPyConnection, table: str, qis: list[str]) -> tuple[int, int]:
    """Rows and distinct QI tuples of ``table``."""
    cols = ", ".join(f'"{q}"' for q in qis)
    rows = con.execute(f'SELECT count(*) FROM "{table}"').fetchone()[0]
    distinct = con.execute(f'SELECT count(*) FROM (SELECT DISTINCT {cols} FROM "{table}")').fetchone()[0]
    return rows, distinct


def environment() -> dict[str, object]:
    env = record.environment()
    return {"date": env["date"], "load_average": env["load_average"]}


def anonymize_in_python(con, table: str, qis: list[str], sensitive: str, k: int) -> dict[str, object]:
    """One verified release made in this process, timed around the call."""
    t = time.perf_counter()
    result = sbc_sql.anonymize(
        con, table, k, qi=qis, sensitive=[sensitive], output=f"{table}_k{k}", replace=True
    )
    seconds = time.perf_counter() - t
    assert result.verdict is not None and result.verdict.ok and result.measures is not None
    return {
        "seconds": seconds,
        "ncp": result.measures.total_ncp,
        "mode": result.mode,
        "stages": dict(result.timings),
    }


def cli(db: Path, table: str, k: int, qis: list[str], sensitive: str, drop: list[str], memory: str | None):
    """The `sbc-sql anonymize --json` command a user would type for this table."""
    cmd = [sys.executable, "-m", "sbc_sql", "anonymize", "--db", str(db), "--table", table]
    cmd += ["--k", str(k), "--qi", ",".join(qis), "--sensitive", sensitive, "--replace", "--json"]
    if drop:
        cmd += ["--drop", ",".join(drop)]
    if memory:
        cmd += ["--memory-limit", memory]
    return cmd


def process(cmd: list[str], env: dict[str, str], cwd: str) -> dict[str, object]:
    """One whole process: its seconds, its own peak RSS (from wait4) and its JSON summary,
    which must say the release was verified; under ``watched.py``, DuckDB's own peaks too."""
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        t = time.perf_counter()
        child = subprocess.Popen(cmd, stdout=out, stderr=err, env=env, cwd=cwd)
        _, status, usage = os.wait4(child.pid, 0)
        seconds = time.perf_counter() - t
        child.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        err.seek(0)
        if child.returncode != 0:
            raise RuntimeError(f"{' '.join(cmd)} exited {child.returncode}: {err.read().decode()[-2000:]}")
        summary = json.loads(out.read())
        watched = [
            json.loads(line.removeprefix("sbc-bench-duckdb "))
            for line in err.read().decode().splitlines()
            if line.startswith("sbc-bench-duckdb ")
        ]
    assert summary["ok"] is True, summary
    rss = usage.ru_maxrss / 1024.0
    done: dict[str, object] = {"seconds": seconds, "peak_rss_mb": rss, "summary": summary}
    if watched:
        done["duckdb_memory_mb"] = watched[-1]["memory_bytes"] / 2**20
        done["duckdb_spill_mb"] = watched[-1]["spill_bytes"] / 2**20
    return done


def processes(cmd: list[str], env: dict[str, str], cwd: str, runs: int) -> list[dict[str, object]]:
    """``runs`` processes of ``cmd`` (one when the first takes REPEAT_UNDER_SECONDS or more)."""
    done = [process(cmd, env, cwd)]
    if done[0]["seconds"] < REPEAT_UNDER_SECONDS:
        done += [process(cmd, env, cwd) for _ in range(runs - 1)]
    return done


def child_env() -> dict[str, str]:
    """The same sbc_sql as this process imported, for processes run outside the checkout,
    its bytecode written and read as an installed package's is (pip compiles it), whatever
    PYTHONDONTWRITEBYTECODE says here: a timed process compiles no source."""
    env = dict(os.environ, PYTHONPATH=str(Path(sbc_sql.__file__).parents[1]))
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    return env


def figures(
    name: str,
    label: str,
    rows: int,
    distinct: int,
    k: int,
    floor: float,
    runs: list[dict[str, object]],
) -> dict[str, object]:
    """An input's figures as scale.json holds them: those of its median process."""
    mid = sorted(runs, key=lambda r: r["seconds"])[len(runs) // 2]
    summary = mid["summary"]
    duckdb_own = {
        key: max(r[key] for r in runs)  # type: ignore[type-var]
        for key in ("duckdb_memory_mb", "duckdb_spill_mb")
        if all(key in r for r in runs)
    }
    stages = dict(summary["seconds"])
    return {
        "input": name,
        "label": label,
        "rows": rows,
        "distinct": distinct,
        "k": k,
        "mode": summary["mode"],
        "process_seconds": sorted(r["seconds"] for r in runs),
        "seconds": sum(stages.values()),
        "stages": stages,
        "peak_rss_mb": max(r["peak_rss_mb"] for r in runs),
        "ncp": summary["total_ncp"],
        "classes": summary["classes"],
        "verified": True,
        "group_by_seconds": floor,
        **duckdb_own,
        **environment(),
    }


def generated(
    name: str,
    label: str,
    build: Callable[[duckdb.DuckDBPyConnection, str], object],
    qis: list[str],
    sensitive: str,
    drop: list[str],
    k: int,
    runs: int,
) -> dict[str, object]:
    """An input built into a database file (untimed), then anonymized by whole processes,
    each under ``watched.py``, DuckDB capped at the input's memory limit."""
    memory = MEMORY_LIMITS.get(name, MEMORY_LIMIT)
    with tempfile.TemporaryDirectory(dir=os.environ.get("SBC_BENCH_DIR")) as tmp:
        db = Path(tmp) / f"{name}.duckdb"
        t = time.perf_counter()
        with duckdb.connect(str(db)) as con:
            con.execute(f"SET memory_limit = '{MEMORY_LIMIT}'")
            build(con, name)
            made = time.perf_counter() - t
            rows, distinct = shape(con, name, qis)
            floor = group_by_floor(con, name, qis)
        print(f"{name}: {rows:,} rows, {distinct:,} distinct QI tuples (made in {made:.1f} s)", flush=True)
        cmd = cli(db, name, k, qis, sensitive, drop, memory)
        watched = [cmd[0], str(WATCHED), str(db), *cmd[3:]]
        done = processes(watched, child_env(), tmp, runs)
    return {**figures(name, label, rows, distinct, k, floor, done), "memory_limit": memory}


def adult_file(path: Path) -> Path:
    """A DuckDB file at ``path`` holding Adult's clean rows as the table adult: its 8 QIs
    and income."""
    with duckdb.connect(str(path)) as con:
        datasets.load_adult(con, "adult", columns=datasets.ADULT_QIS_8 + ["income"])
    return path


def adult_command(path: Path, k: int) -> list[str]:
    """The whole ``sbc-sql anonymize --json`` process on the Adult file at ``path``."""
    return cli(path, "adult", k, datasets.ADULT_QIS_8, "income", [], None)


def process_times(cmd: list[str], env: dict[str, str], cwd: str, runs: int) -> list[float]:
    """Seconds of ``runs`` whole processes of ``cmd``, each verified, sorted."""
    return sorted(float(process(cmd, env, cwd)["seconds"]) for _ in range(runs))  # type: ignore[arg-type]


#: what an anonymize process cannot do without importing: the arrays, Arrow's compute
#: functions, the database, the SQL builder and its DuckDB generator, the command line
FLOOR_IMPORTS = "import numpy, pyarrow.compute, duckdb, sqlglot, sqlglot.generators.duckdb, typer"


def exit_seconds(cmd: list[str], env: dict[str, str], cwd: str, runs: int) -> list[float]:
    """Seconds of ``runs`` whole processes of ``cmd``, each of which must exit 0, sorted:
    for commands that print no release summary (an interpreter alone, ``--help``)."""
    done = []
    for _ in range(runs):
        t = time.perf_counter()
        subprocess.run(cmd, env=env, cwd=cwd, check=True, stdout=subprocess.DEVNULL)
        done.append(time.perf_counter() - t)
    return sorted(done)


def adult(k: int, runs: int) -> dict[str, object]:
    """Adult in Python (after a warm-up that loads the kernels) and as whole processes, with
    the kernels compiled at install and on numba's JIT."""
    qis = datasets.ADULT_QIS_8
    con = duckdb.connect()
    datasets.load_adult(con, "adult", columns=qis + ["income"])
    anonymize_in_python(con, "adult", qis, "income", k)
    inside = sorted(
        (anonymize_in_python(con, "adult", qis, "income", k) for _ in range(runs)), key=lambda r: r["seconds"]
    )
    mid = inside[len(inside) // 2]
    rows, distinct = shape(con, "adult", qis)
    floor = group_by_floor(con, "adult", qis)
    con.close()
    with tempfile.TemporaryDirectory() as tmp:
        cmd = adult_command(adult_file(Path(tmp) / "adult.duckdb"), k)
        done = [process(cmd, child_env(), tmp) for _ in range(runs)]
        # the same processes on numba's JIT (its import and cache loading)
        jit = [process(cmd, dict(child_env(), SBC_SQL_KERNELS="jit"), tmp) for _ in range(runs)]
        # the floor under any such process: the interpreter, and the imports it needs
        bare = exit_seconds([sys.executable, "-c", "pass"], child_env(), tmp, runs)
        imports = exit_seconds([sys.executable, "-c", FLOOR_IMPORTS], child_env(), tmp, runs)
    out = figures("adult", "Adult", rows, distinct, k, floor, done)
    # in Python the figures are those of the median call in this process
    out.update(
        seconds=mid["seconds"],
        stages=mid["stages"],
        python_seconds=[r["seconds"] for r in inside],
        process_kernels=compiled.engine(),
        process_jit_seconds=sorted(r["seconds"] for r in jit),
        bare_seconds=bare,
        import_floor_seconds=imports,
    )
    assert out["ncp"] == mid["ncp"], (out["ncp"], mid["ncp"])
    return out


def ncp_curve() -> dict[str, object]:
    """Total NCP of verified releases of Adult at each k of NCP_KS, made in this process."""
    qis = datasets.ADULT_QIS_8
    con = duckdb.connect()
    datasets.load_adult(con, "adult", columns=qis + ["income"])
    ncp = {str(k): anonymize_in_python(con, "adult", qis, "income", k)["ncp"] for k in NCP_KS}
    return {"input": "ncp", "label": "Adult, NCP against k", "ncp_by_k": ncp, **environment()}


def adult33(con: duckdb.DuckDBPyConnection, table: str) -> None:
    datasets.make_adult_replicas(con, table)


def growing(rows: int) -> Callable[[duckdb.DuckDBPyConnection, str], None]:
    def build(con: duckdb.DuckDBPyConnection, table: str) -> None:
        datasets.make_adult_growing(con, table, rows)

    return build


def synthetic(rows: int) -> Callable[[duckdb.DuckDBPyConnection, str], None]:
    def build(con: duckdb.DuckDBPyConnection, table: str) -> None:
        datasets.make_synthetic(con, table, rows)

    return build


def inputs(k: int, runs: int) -> dict[str, Callable[[], dict[str, object]]]:
    """Every input by the name ``--only`` takes, in the order of a full run."""
    adult_qis, synth_qis = datasets.ADULT_QIS_8, datasets.SYNTH_QIS
    sens = datasets.SYNTH_SENSITIVE
    return {
        "adult": lambda: adult(k, runs),
        "adult33": lambda: generated("adult33", "Adult x 33", adult33, adult_qis, "income", [], k, runs),
        "adult1m_growing": lambda: generated(
            "adult1m_growing", "Adult growing, 1M", growing(1_000_000), adult_qis, "income", [], k, runs
        ),
        "adult3m_growing": lambda: generated(
            "adult3m_growing", "Adult growing, 3M", growing(3_000_000), adult_qis, "income", [], k, runs
        ),
        "synthetic1m": lambda: generated(
            "synthetic1m", "synthetic, 1M", synthetic(1_000_000), synth_qis, sens, SYNTH_DROP, k, runs
        ),
        "synthetic10m": lambda: generated(
            "synthetic10m", "synthetic, 10M", synthetic(10_000_000), synth_qis, sens, SYNTH_DROP, k, runs
        ),
        "synthetic100m": lambda: generated(
            "synthetic100m", "synthetic, 100M", synthetic(100_000_000), synth_qis, sens, SYNTH_DROP, k, runs
        ),
        "ncp": ncp_curve,
    }


def anonymize_once(
    con, table: str, qis: list[str], sensitive: str, k: int, drop: list[str], mode: str
) -> dict[str, object]:
    t = time.perf_counter()
    result = sbc_sql.anonymize(
        con,
        table,
        k,
        qi=qis,
        sensitive=[sensitive],
        drop=drop,
        output=f"{table}_k{k}",
        replace=True,
        mode=mode,
    )
    seconds = time.perf_counter() - t
    assert result.verdict is not None and result.verdict.ok and result.measures is not None
    return {"seconds": seconds, "ncp": result.measures.total_ncp}


def utility() -> tuple[str, list[dict[str, object]]]:
    lines = ["| input | k | exact NCP | blocks NCP | blocks / exact |", "|---|---|---|---|---|"]
    figures: list[dict[str, object]] = []
    inputs = []
    con = duckdb.connect()
    datasets.load_adult(con, "adult", columns=datasets.ADULT_QIS_8 + ["income"])
    inputs.append(("Adult 30,162", con, "adult", datasets.ADULT_QIS_8, "income", []))
    con2 = duckdb.connect()
    datasets.make_synthetic(con2, "people", 200_000)
    inputs.append(
        (
            "synthetic 200,000",
            con2,
            "people",
            datasets.SYNTH_QIS,
            datasets.SYNTH_SENSITIVE,
            [datasets.SYNTH_IDENTIFIER],
        )
    )
    for label, c, table, qis, sens, drop in inputs:
        for k in (5, 10, 50):
            e = anonymize_once(c, table, qis, sens, k, drop, mode="exact")
            b = anonymize_once(c, table, qis, sens, k, drop, mode="blocks")
            row = (
                f"| {label} | {k} | {100 * e['ncp']:.2f} % ({e['seconds']:.1f} s) | "
                f"{100 * b['ncp']:.2f} % ({b['seconds']:.1f} s) | "
                f"{b['ncp'] / e['ncp']:.3f} |"
            )
            print(row, flush=True)
            lines.append(row)
            figures.append(
                {
                    "input": label,
                    "k": k,
                    "exact_ncp": e["ncp"],
                    "exact_seconds": e["seconds"],
                    "blocks_ncp": b["ncp"],
                    "blocks_seconds": b["seconds"],
                }
            )
    return "\n".join(lines), figures


def merged(runs: list[dict[str, object]], order: list[str]) -> list[dict[str, object]]:
    """This run's inputs, and those of the previous scale.json that this run did not measure
    (by input name), in the order of a full run."""
    try:
        previous = record.read("scale")["runs"]
    except FileNotFoundError:
        previous = []
    done = {m["input"] for m in runs}
    kept = [m for m in previous if m.get("input") in order and m["input"] not in done]
    return sorted(kept + runs, key=lambda m: order.index(m["input"]))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", default="", help="comma-separated inputs (default: all): adult,adult33")
    parser.add_argument("--k", type=int, default=10)
    parser.add_argument("--runs", type=int, default=RUNS, help="processes timed per input under 10 s")
    parser.add_argument(
        "--before", action="store_true", help="also record the figures as scale_before.json (the baseline)"
    )
    parser.add_argument(
        "--utility", action="store_true", help="only compare block mode's NCP with exact SBCA's"
    )
    args = parser.parse_args(argv)
    RESULTS.mkdir(exist_ok=True)
    if args.utility:
        text, rows = utility()
        (RESULTS / "scale_utility.md").write_text(text + "\n")
        record.write("scale_utility", {"runs": rows})
        print(text)
        return 0
    table = inputs(args.k, args.runs)
    # 100,000,000 rows take some 20 minutes and 15 GB of disk: asked for by name
    chosen = [x for x in args.only.split(",") if x] or [x for x in table if x != "synthetic100m"]
    unknown = [x for x in chosen if x not in table]
    if unknown:
        parser.error(f"unknown inputs {unknown}; choose from {', '.join(table)}")
    runs = []
    for name in chosen:
        runs.append(table[name]())
        print(json.dumps({key: value for key, value in runs[-1].items() if key != "stages"}), flush=True)
    fig = {"memory_limit": MEMORY_LIMIT, "runs": merged(runs, list(table))}
    record.write("scale", fig)
    if args.before:
        record.write("scale_before", fig)
        (RESULTS / "scale_before.md").write_text(report.scale_page(record.read("scale_before"), None))
    text = report.scale_page(record.read("scale"), report.scale_before())
    (RESULTS / "scale.md").write_text(text)
    print(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
