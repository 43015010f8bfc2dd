"""Start-up of the command line: whole processes of ``sbc-sql --version``, ``--help``,
``anonymize --help`` and a whole ``sbc-sql anonymize`` on Adult (30,162 rows, 8 QIs, k = 10),
each against a bare ``python -c pass`` measured in the same run, and the time a fresh
interpreter takes to import sbc_sql.cli.

    python benchmarks/bench_startup.py [--runs 9] [--against DIR]

Every figure is the median of --runs processes; the commands take turns, one run each per
round, so that a change in the machine's load reaches all of them alike. ``python -m
sbc_sql`` and the installed console script (``sbc-sql`` beside this Python) both run this
checkout's package (it is put first on PYTHONPATH). ``--against DIR`` times another
checkout of sbc-sql in the same rounds, e.g. ``git worktree add /tmp/before <commit>``, for
a before/after on the same machine and load (its compiled kernels, if any, copied into its
sbc_sql/cluster/sbca_plus/ as pip install would have built them). The Adult file and its
process are bench_scale.py's. Prints a Markdown report and writes
benchmarks/results/startup.md and startup.json.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import bench_scale
import record

ROOT = Path(__file__).resolve().parents[1]
K = 10
#: the row of the in-process import (no process start in it, so no ratio to one)
IMPORT = "import sbc_sql.cli (in process)"
#: what a fresh interpreter runs to time the import of the command line
IMPORT_PROBE = "import time; t = time.perf_counter(); import sbc_sql.cli; print(time.perf_counter() - t)"


def commands(adult: Path) -> dict[str, list[str]]:
    """Each timed process by its label (the bare interpreter first)."""
    python = [sys.executable]
    script = str(Path(sys.executable).with_name("sbc-sql"))
    out = {
        "python -c pass": [*python, "-c", "pass"],
        "python -m sbc_sql --version": [*python, "-m", "sbc_sql", "--version"],
        "python -m sbc_sql --help": [*python, "-m", "sbc_sql", "--help"],
        "python -m sbc_sql anonymize --help": [*python, "-m", "sbc_sql", "anonymize", "--help"],
    }
    if Path(script).is_file():
        out["sbc-sql --version"] = [script, "--version"]
        out["sbc-sql --help"] = [script, "--help"]
    out[f"anonymize Adult, k = {K}"] = bench_scale.adult_command(adult, K)
    return out


def environment(checkout: Path) -> dict[str, str]:
    """The processes' environment: ``checkout``'s sbc_sql first, and its bytecode written
    and read as an installed package's is (pip compiles it), whatever PYTHONDONTWRITEBYTECODE
    says here, so that no timed run compiles the sources."""
    env = dict(os.environ, PYTHONPATH=str(checkout))
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    return env


def import_seconds(env: dict[str, str], cwd: str) -> float:
    """Seconds a fresh interpreter spends in ``import sbc_sql.cli``."""
    done = subprocess.run(
        [sys.executable, "-c", IMPORT_PROBE], check=True, capture_output=True, text=True, env=env, cwd=cwd
    )
    return float(done.stdout)


def timed(label: str, cmd: list[str], env: dict[str, str], cwd: str) -> list[float]:
    """The seconds of one process of a command: the anonymize run's release verified (its
    JSON summary), the others only exiting 0 (they print no summary)."""
    if label.startswith("anonymize"):
        return bench_scale.process_times(cmd, env, cwd, runs=1)
    return bench_scale.exit_seconds(cmd, env, cwd, runs=1)


def measure(checkouts: dict[str, Path], runs: int) -> dict[str, dict[str, list[float]]]:
    """Seconds of every command of every checkout, ``runs`` rounds, each round every
    command once (sorted per command)."""
    times: dict[str, dict[str, list[float]]] = {name: {} for name in checkouts}
    with tempfile.TemporaryDirectory() as tmp:
        adult = bench_scale.adult_file(Path(tmp) / "adult.duckdb")
        envs = {name: environment(path) for name, path in checkouts.items()}
        for env in envs.values():  # each checkout's bytecode written, its first run not counted
            for label, cmd in commands(adult).items():
                timed(label, cmd, env, tmp)
        for _ in range(runs):
            for name, env in envs.items():
                for label, cmd in commands(adult).items():
                    times[name].setdefault(label, []).extend(timed(label, cmd, env, tmp))
                times[name].setdefault(IMPORT, []).append(import_seconds(env, tmp))
    return {name: {label: sorted(s) for label, s in got.items()} for name, got in times.items()}


def table(times: dict[str, dict[str, list[float]]]) -> str:
    """One row per command; per checkout its median seconds and its ratio to python -c pass."""
    names = list(times)
    head = "| command | " + " | ".join(f"{n}: s | {n}: x python" for n in names) + " |"
    rows = [head, "|---|" + "---|---|" * len(names)]
    for label in times[names[0]]:
        cells = []
        for name in names:
            median = statistics.median(times[name][label])
            bare = statistics.median(times[name]["python -c pass"])
            spread = f" ({times[name][label][0]:.3f}-{times[name][label][-1]:.3f})"
            cells.append(f"{median:.3f}{spread} | " + ("-" if label == IMPORT else f"{median / bare:.1f}"))
        rows.append(f"| {label} | " + " | ".join(cells) + " |")
    return "\n".join(rows)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=9, help="processes per command (the median is kept)")
    parser.add_argument("--against", type=Path, help="another checkout of sbc-sql, timed in the same rounds")
    args = parser.parse_args(argv)
    checkouts = {"this checkout": ROOT}
    if args.against is not None:
        checkouts["--against"] = args.against.resolve()
    times = measure(checkouts, args.runs)
    env = record.environment()
    against = f", against {args.against} (`--against`)" if args.against else ""
    text = (
        "# Start-up: whole processes of the command line\n\n"
        f"`{record.command()}`: median seconds of {args.runs} processes of each command (fastest-"
        f"slowest in brackets), the commands taking turns; x python is the median over a bare "
        f"`python -c pass` of the same run. This checkout{against}. Adult: 30,162 rows, 8 QIs, "
        f"income sensitive, k = {K}, in a DuckDB file. The last row is the time a fresh "
        "interpreter spends importing sbc_sql.cli (no process start in it).\n\n"
        f"{table(times)}\n\n"
        f"{env['cpus']} cores, Python {env['python']}, load average {env['load_average']} at the "
        f"end, {env['date']}.\n"
    )
    print(text)
    (record.RESULTS / "startup.md").write_text(text)
    record.write(
        "startup",
        {"runs": args.runs, "checkouts": {n: str(p) for n, p in checkouts.items()}, "seconds": times},
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
