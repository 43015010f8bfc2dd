"""Incremental releases: a table that grows by daily loads, refreshed, against anonymizing it
whole again each day.

UCI Adult (30,162 rows) is split, in a seeded order, into a first half and then ten loads of
5 %. The first half is anonymized with ``incremental=True``; after each load the release is
refreshed (``sbc_sql.refresh``) and, in the same process and on the same table, the whole
table is anonymized again (a plain release under another name), the two timed one after the
other. Every version is verified against the source and its parent (``sbc_sql.verify``,
which checks the whole version chain). After the last load both releases are measured
(total NCP, ``sbc_sql.measure``) and the rows pending counted. Two settings: k = 10 alone
(8 QIs, income sensitive) and k = 10 with distinct l = 3 (7 QIs, occupation sensitive, 14
values). ``--rows N`` runs the same on the synthetic table of N rows instead
(datasets.py's generator, 8 QIs, diagnosis sensitive), to see how the ratio moves with size.

    python benchmarks/bench_refresh.py            # Adult, both settings (about a minute)
    python benchmarks/bench_refresh.py --rows 1000000 --loads 4

Prints a table per setting and writes benchmarks/results/refresh.json (with --rows:
refresh_synthetic.json).
"""

from __future__ import annotations

import argparse
import resource
import statistics
import sys
import time
from pathlib import Path
from typing import Any

import duckdb

sys.path.insert(0, str(Path(__file__).resolve().parent))
import datasets
import record

import sbc_sql
from sbc_sql.run.refresh import refresh

K = 10
LOADS = 10
#: the share of the table in the first release, and in each load after it
FIRST, LOAD = 0.5, 0.05
#: the order rows arrive in: a seeded hash of each row's number
SEED = 7


def settings(synthetic: bool) -> list[dict[str, Any]]:
    """Each setting's QIs, sensitive column and criteria."""
    if synthetic:
        qis, sens = datasets.SYNTH_QIS, datasets.SYNTH_SENSITIVE
        return [{"name": "k = 10", "qi": qis, "sensitive": sens, "criteria": {}}]
    qis8 = datasets.ADULT_QIS_8
    qis7 = [q for q in qis8 if q != "occupation"]
    return [
        {"name": "k = 10", "qi": qis8, "sensitive": "income", "criteria": {}},
        {"name": "k = 10, l = 3", "qi": qis7, "sensitive": "occupation", "criteria": {"l_diversity": 3}},
    ]


def arrivals(con: duckdb.DuckDBPyConnection, source: str, columns: list[str], loads: int) -> None:
    """``source``'s rows numbered in a seeded order as ``arrivals`` (sbc_day 0: the first
    release; 1 .. loads: each load), and the table ``t`` holding day 0."""
    cols = ", ".join(f'"{c}"' for c in columns)
    con.execute(
        f"CREATE TABLE arrivals AS SELECT {cols}, ROW_NUMBER() OVER (ORDER BY hash(rn, {SEED})) AS sbc_order "
        f"FROM (SELECT {cols}, ROW_NUMBER() OVER () AS rn FROM {source})"
    )
    (n,) = con.execute("SELECT COUNT(*) FROM arrivals").fetchone()
    first = int(n * FIRST)
    each = int(n * LOAD)
    con.execute(
        "ALTER TABLE arrivals ADD COLUMN sbc_day INTEGER; "
        f"UPDATE arrivals SET sbc_day = CASE WHEN sbc_order <= {first} THEN 0 "
        f"ELSE LEAST((sbc_order - {first} - 1) // {each} + 1, {loads}) END"
    )
    con.execute(f"CREATE TABLE t AS SELECT {cols} FROM arrivals WHERE sbc_day = 0")


def run_setting(con: duckdb.DuckDBPyConnection, setting: dict[str, Any], loads: int) -> dict[str, Any]:
    columns = [*setting["qi"], setting["sensitive"]]
    roles = {"qi": setting["qi"], "sensitive": setting["sensitive"], **setting["criteria"]}
    t = time.perf_counter()
    sbc_sql.anonymize(con, "t", K, output="inc", incremental=True, replace=True, **roles).close()
    first_seconds = time.perf_counter() - t
    days = []
    cols = ", ".join(f'"{c}"' for c in columns)
    for day in range(1, loads + 1):
        con.execute(f"INSERT INTO t SELECT {cols} FROM arrivals WHERE sbc_day = ?", [day])
        (rows,) = con.execute("SELECT COUNT(*) FROM t").fetchone()
        t = time.perf_counter()
        done = refresh(con, "inc")
        refreshed = time.perf_counter() - t
        t = time.perf_counter()
        sbc_sql.anonymize(con, "t", K, output="whole", replace=True, **roles).close()
        whole = time.perf_counter() - t
        verdict = sbc_sql.verify(con, "t", "inc", K, **setting["criteria"])
        assert verdict.ok, verdict.problems
        days.append(
            {
                "day": day,
                "rows": int(rows),
                "version": done.version,
                "rows_added": done.rows_added,
                "placed_in_existing": done.placed_in_existing,
                "classes_added": done.classes_added,
                "pending": done.pending,
                "refresh_seconds": round(refreshed, 4),
                "whole_seconds": round(whole, 4),
                "ratio": round(refreshed / whole, 3),
                "verified": verdict.ok,
            }
        )
        print(
            f"  day {day}: {rows:,} rows, version {done.version}: +{done.rows_added:,} "
            f"({done.placed_in_existing:,} into published classes), {done.pending:,} pending; "
            f"refresh {refreshed:.2f} s, whole {whole:.2f} s ({refreshed / whole:.2f}x)",
            flush=True,
        )
    inc = sbc_sql.measure(con, "t", "inc").total_ncp
    whole_ncp = sbc_sql.measure(con, "t", "whole").total_ncp
    (n,) = con.execute("SELECT COUNT(*) FROM t").fetchone()
    last = days[-1]
    return {
        "setting": setting["name"],
        "k": K,
        "criteria": setting["criteria"],
        "first_rows": int(con.execute("SELECT COUNT(*) FROM arrivals WHERE sbc_day = 0").fetchone()[0]),
        "first_seconds": round(first_seconds, 4),
        "days": days,
        "rows": int(n),
        "ncp_refreshed": round(inc, 6),
        "ncp_whole": round(whole_ncp, 6),
        "ncp_ratio": round(inc / whole_ncp, 3) if whole_ncp else None,
        "pending_last": last["pending"],
        "pending_share_last": round(last["pending"] / int(n), 5),
        "ratio_median": round(statistics.median(d["ratio"] for d in days), 3),
        "ratio_max": max(d["ratio"] for d in days),
    }


def table(runs: list[dict[str, Any]]) -> str:
    """The Markdown table of a results file's runs."""
    head = (
        "| setting | rows after | refresh s (median, max) | whole s (median) | refresh / whole (median, max) "
        "| NCP refreshed | NCP whole | NCP ratio | pending after the last load | every version verified |"
    )
    lines = [head, "|---|---:|---:|---:|---:|---:|---:|---:|---:|---|"]
    for r in runs:
        ref = [d["refresh_seconds"] for d in r["days"]]
        whole = [d["whole_seconds"] for d in r["days"]]
        lines.append(
            f"| {r['setting']} | {r['rows']:,} | {statistics.median(ref):.2f}, {max(ref):.2f} "
            f"| {statistics.median(whole):.2f} | {r['ratio_median']:.2f}x, {r['ratio_max']:.2f}x "
            f"| {100 * r['ncp_refreshed']:.2f} % | {100 * r['ncp_whole']:.2f} % | {r['ncp_ratio']:.2f}x "
            f"| {r['pending_last']:,} ({100 * r['pending_share_last']:.2f} %) "
            f"| {'yes' if all(d['verified'] for d in r['days']) else 'no'} |"
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, help="the synthetic table of this many rows instead of Adult")
    parser.add_argument("--loads", type=int, default=LOADS, help="daily loads after the first half")
    args = parser.parse_args(argv)
    runs = []
    for setting in settings(args.rows is not None):
        con = duckdb.connect()
        columns = [*setting["qi"], setting["sensitive"]]
        if args.rows is None:
            datasets.load_adult(con, "source", columns=columns)
        else:
            datasets.make_synthetic(con, "source", args.rows)
        arrivals(con, "source", columns, args.loads)
        print(f"{setting['name']}:", flush=True)
        runs.append(run_setting(con, setting, args.loads))
        con.close()
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024**2
    print(table(runs))
    print(f"peak RSS of this process {peak:.2f} GB")
    name = "refresh" if args.rows is None else "refresh_synthetic"
    record.write(name, {"runs": runs, "loads": args.loads, "peak_rss_gb": round(peak, 3)})
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
