"""Render the benchmark tables of docs/metrics.md and benchmarks/README.md from the JSON files the
benchmarks write.

Each table sits in one of those files between marker comments, e.g.
``<!-- bench:utility -->`` ... ``<!-- /bench:utility -->``; this script replaces what is
between them with the table rendered from benchmarks/results/*.json, so a figure in either
file is always one a benchmark run produced. tests/test_bench_report.py checks that both
equal what this renders.

    python benchmarks/report.py           # rewrite both files' tables
    python benchmarks/report.py --check   # exit 1 if either differs from the rendering
"""

from __future__ import annotations

import argparse
import math
import re
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import record

ROOT = Path(__file__).resolve().parents[1]
#: the files whose tables are rendered
PAGES = (ROOT / "docs" / "metrics.md", ROOT / "benchmarks" / "README.md")
DASH = "—"


def _cells(values: Sequence[float | None], bold: bool = False) -> list[str]:
    out = []
    for v in values:
        text = DASH if v is None else f"{v:.2f}"
        out.append(f"**{text}**" if bold and v is not None else text)
    return out


def _table(head: Sequence[str], rows: Sequence[Sequence[str]], align: str = "---") -> str:
    first = "|" + "|".join(f" {h} " if h else " " for h in head) + "|"
    lines = [first, "|---|" + f"{align}|" * (len(head) - 1)]
    lines += ["| " + " | ".join(r) + " |" for r in rows]
    return "\n".join(lines)


def paper_setting(name: str, labels: dict[str, str]) -> str:
    """Total NCP (%) per algorithm and k of the paper's experiment, one setting."""
    fig = record.read(f"setting_{name}")
    ks = fig["ks"]
    by = {(r["algorithm"], r["k"]): r for r in fig["runs"]}
    rows = []
    for algorithm in fig["algorithms"]:
        values = [100 * by[(algorithm, k)]["ncp"] if (algorithm, k) in by else None for k in ks]
        rows.append([labels.get(algorithm, algorithm), *_cells(values)])
    return _table(["algorithm", *(f"k={k}" for k in ks)], rows)


def _utility_rows(section: dict[str, Any], order: Sequence[tuple[str, str]]) -> list[list[str]]:
    by = {r["key"]: r for r in section["table"]}
    rows = []
    for key, label in order:
        bold = key == "sbca"
        rows.append([f"**{label}**" if bold else label, *_cells(by[key]["ncp"], bold=bold)])
    return rows


def utility_adult() -> str:
    """Adult 30,162 x 8 QIs: published figures, the default, the baselines and the ablations."""
    section = record.read("utility")["adult"]
    by = {r["key"]: r for r in section["table"]}
    order = [(r["key"], r["label"]) for r in section["table"] if r["key"].startswith("published-")]
    order += [
        ("sbca", "sbc-sql default"),
        ("kmember", "our greedy k-member (measured)"),
        ("mondrian", "our Mondrian (measured)"),
        ("sbca-paper", "the paper's SBCA (measured)"),
    ]
    order += [(r["key"], r["label"]) for r in section["table"] if r["label"].startswith("ablation: ")]
    assert all(key in by for key, _ in order)
    head = ["", *(f"k={k}" for k in section["ks"])]
    return _table(head, _utility_rows(section, order), align="---:") + _seconds(by)


def utility_synthetic() -> str:
    """The 50,000-row synthetic set: the default against every measured baseline."""
    section = record.read("utility")["synthetic"]
    by = {r["key"]: r for r in section["table"]}
    ks = section["ks"]
    incognito = [s for s in by["incognito"]["seconds"] if s is not None]
    run_ks = [str(k) for k, v in zip(ks, by["incognito"]["ncp"], strict=True) if v is not None]
    incognito_label = "Incognito (measured)"
    if len(run_ks) < len(ks):
        incognito_label = (
            f"Incognito (measured; k = {', '.join(run_ks)} only: "
            f"{min(incognito):.0f}-{max(incognito):.0f} s a run)"
        )
    order = [
        ("sbca", "sbc-sql default"),
        ("sbca-paper", "the paper's SBCA (measured)"),
        ("kmember", "our greedy k-member (measured)"),
        ("mondrian", "our Mondrian (measured)"),
        ("incognito", incognito_label),
        ("datafly", "Datafly (measured)"),
    ]
    head = ["", *(f"k={k}" for k in ks)]
    return _table(head, _utility_rows(section, order), align="---:") + _seconds(by)


def _seconds(by: dict[str, dict[str, Any]]) -> str:
    """The range of seconds a run of the default and of k-member, its closest competitor."""

    def span(key: str) -> str:
        values = [v for v in by[key]["seconds"] if v is not None]
        return f"{min(values):.2f}-{max(values):.2f} s"

    return (
        f"\n\nSeconds a run (each release clustered, written, verified and measured): the default "
        f"{span('sbca')}, our greedy k-member {span('kmember')}."
    )


def _spread(values: Sequence[float]) -> str:
    ordered = sorted(values)
    return (
        f"{ordered[len(ordered) // 2]:.2f} s (median of {len(ordered)}; {ordered[0]:.2f}-{ordered[-1]:.2f} s)"
    )


#: the scale targets: (label, input, what is measured, limit, unit); the measure names a key
#: of an input's figures in scale.json, or one derived by ``_measure``
SCALE_TARGETS = (
    ("Adult, whole process", "adult", "process", 0.5, "s"),
    ("Adult, in Python", "adult", "python", 0.15, "s"),
    ("Adult x 33, whole process", "adult33", "process", 1.5, "s"),
    ("Adult growing 3M, whole process", "adult3m_growing", "process", 8.0, "s"),
    ("growth exponent 1M -> 3M (Adult growing, the run's seconds)", "adult3m_growing", "growth", 1.0, ""),
    ("synthetic 1M, whole process", "synthetic1m", "process", 4.0, "s"),
    ("synthetic 1M, the run over GROUP BY", "synthetic1m", "ratio", 30.0, "x"),
    ("synthetic 10M, whole process", "synthetic10m", "process", 40.0, "s"),
    ("synthetic 10M, peak RSS", "synthetic10m", "rss", 2.0, "GB"),
    ("synthetic 100M, whole process (verified)", "synthetic100m", "process", 900.0, "s"),
    ("synthetic 100M, peak RSS", "synthetic100m", "rss", 6.0, "GB"),
    ("total NCP on Adult at k = 10", "adult", "ncp", 4.11, "%"),
    # within 1 % of the NCP before the streamed run and the kernels' candidate bounds
    ("total NCP on synthetic 1M at k = 10", "synthetic1m", "ncp", round(2.48 * 1.01, 3), "%"),
    ("total NCP on synthetic 10M at k = 10", "synthetic10m", "ncp", round(1.40 * 1.01, 3), "%"),
)


def _median(values: Sequence[float]) -> float:
    return sorted(values)[len(values) // 2]


def _measure(by: dict[str, dict[str, Any]], name: str, what: str) -> float | None:
    """One target's figure from an input's figures (None when the input was not run)."""
    m = by.get(name)
    if m is None:
        return None
    if what == "process":
        return _median(m["process_seconds"])
    if what == "python":
        return _median(m["python_seconds"])
    if what == "ratio":
        return m["seconds"] / m["group_by_seconds"]
    if what == "rss":
        return m["peak_rss_mb"] / 1024
    if what == "ncp":
        return 100 * m["ncp"]
    one = by.get("adult1m_growing")
    if one is None:
        return None
    return math.log(m["seconds"] / one["seconds"]) / math.log(3)


def _shown(value: float | None, unit: str) -> str:
    if value is None:
        return DASH
    if unit == "x":
        return f"{value:.1f}x"
    return f"{value:.2f}" + (f" {unit}" if unit else "")


def scale_targets(fig: dict[str, Any], before: dict[str, Any] | None) -> str:
    """Each scale target with the figure measured, the baseline's, and the margin."""
    by = {m["input"]: m for m in fig["runs"]}
    was = {m["input"]: m for m in before["runs"]} if before else {}
    rows = []
    for label, name, what, limit, unit in SCALE_TARGETS:
        value = _measure(by, name, what)
        if value is None:
            verdict = "not run"
        elif value <= limit:
            verdict = f"met, {_shown(limit - value, unit)} to spare"
        else:
            verdict = f"missed by {_shown(value - limit, unit)} ({100 * (value / limit - 1):+.0f} %)"
        cells = [label, "<= " + _shown(limit, unit), _shown(value, unit)]
        if before:
            cells.append(_shown(_measure(was, name, what), unit))
        rows.append([*cells, verdict])
    head = ["target", "limit", "measured", *(["before"] if before else []), "result"]
    return _table(head, rows)


def scale_ncp(fig: dict[str, Any], before: dict[str, Any] | None) -> str:
    """Total NCP on Adult against k: this run, the baseline and results/utility.json."""
    by = {m["input"]: m for m in fig["runs"]}
    curve = by.get("ncp")
    if curve is None:
        return ""
    ks = list(curve["ncp_by_k"])
    rows = [["this run", *(f"{100 * curve['ncp_by_k'][k]:.2f}" for k in ks)]]
    was = {m["input"]: m for m in before["runs"]}.get("ncp") if before else None
    if was is not None:
        rows.append(["before (scale_before.json)", *(f"{100 * was['ncp_by_k'][k]:.2f}" for k in ks)])
    utility = record.read("utility")
    today = {str(k): v for k, v in zip(utility["adult"]["ks"], _row(utility["adult"], "sbca"), strict=True)}
    rows.append(
        [
            f"results/utility.json ({utility['environment']['date']})",
            *(DASH if today.get(k) is None else f"{today[k]:.2f}" for k in ks),
        ]
    )
    return _table(["Adult, total NCP (%)", *(f"k={k}" for k in ks)], rows)


def _row(section: dict[str, Any], key: str) -> list[float | None]:
    return next(r["ncp"] for r in section["table"] if r["key"] == key)


def scale_before() -> dict[str, Any] | None:
    """The baseline's figures (results/scale_before.json), if recorded."""
    try:
        return record.read("scale_before")
    except FileNotFoundError:
        return None


def scale_page(fig: dict[str, Any], before: dict[str, Any] | None) -> str:
    """The scale figures: one row per input (with the baseline's seconds and NCP beside them
    when ``before`` is given), the targets and the NCP curve on Adult."""
    was = {m["input"]: m for m in before["runs"]} if before else {}
    rows = []
    for m in fig["runs"]:
        if "rows" not in m:
            continue
        b = was.get(m["input"])
        process = _median(m["process_seconds"])
        cells = [
            m["label"],
            f"{m['rows']:,}",
            f"{m['distinct']:,}",
            str(m["k"]),
            m.get("mode", DASH),
            f"{process:.2f}",
            *([DASH if b is None else f"{_median(b['process_seconds']):.2f}"] if before else []),
            f"{m['seconds']:.2f}",
            f"{m['seconds'] / m['group_by_seconds']:.0f}x ({m['group_by_seconds']:.3f} s)",
            f"{m['peak_rss_mb']:.0f}",
            _duckdb_own(m),
            f"{100 * m['ncp']:.2f} %",
            *([DASH if b is None else f"{100 * b['ncp']:.2f} %"] if before else []),
            f"{m['load_average'][0]:.1f}",
            ", ".join(f"{s} {v:.2f}" for s, v in m["stages"].items()),
        ]
        rows.append(cells)
    head = [
        "input",
        "rows",
        "distinct QI tuples",
        "k",
        "mode",
        "whole process s",
        *(["before"] if before else []),
        "run s",
        "run vs GROUP BY",
        "peak RSS MB",
        "DuckDB memory / spill MB (cap)",
        "total NCP",
        *(["before"] if before else []),
        "load",
        "stages (s)",
    ]
    notes = [
        "Whole process: `sbc-sql anonymize --json` from start to exit, the median of "
        f"{_runs(fig)} processes (one where a process takes 10 s or more), its peak RSS the "
        "largest of them; every release verified. Run s: the sum of the release's stage "
        "timings (Adult: `sbc_sql.anonymize` in Python, the median of as many calls after a "
        "warm-up); GROUP BY: a DuckDB `GROUP BY` of all QIs of the same table in the same run.",
        f"Generated tables cap DuckDB at `--memory-limit {fig['memory_limit']}` unless the "
        "row says otherwise; their processes run under `benchmarks/watched.py`, which samples "
        "DuckDB's own memory (its buffer manager's, part of the process's RSS) and what it "
        "spilled to disk every quarter second: the peaks are shown. Mode `streamed`: the "
        "table is larger than `--held-rows` (default 1,000,000), and its rows are clustered "
        "streamed from DuckDB a run of blocks at a time.",
    ]
    by = {m["input"]: m for m in fig["runs"]}
    adult = by.get("adult")
    if adult is not None:
        notes.append(
            f"Adult as a process with numba's JIT instead of the kernels compiled at install "
            f"(`SBC_SQL_KERNELS=jit`): {_spread(adult['process_jit_seconds'])}; with them "
            f"({adult['process_kernels']}): {_spread(adult['process_seconds'])}."
        )
        if "import_floor_seconds" in adult:
            notes.append(
                "The floor under an Adult process, in the same run: a bare interpreter "
                f"{_spread(adult['bare_seconds'])}; the interpreter importing what an anonymize "
                f"process cannot do without (numpy, pyarrow.compute, duckdb, sqlglot and its "
                f"DuckDB generator, typer) {_spread(adult['import_floor_seconds'])}."
            )
    growth = _measure(by, "adult3m_growing", "growth")
    if growth is not None:
        notes.append(f"From 1M to 3M rows of Adult growing the run's seconds grow as rows^{growth:.2f}.")
    one, ten = by.get("synthetic1m"), by.get("synthetic10m")
    if one is not None and ten is not None:
        growth = ten["seconds"] / one["seconds"]
        notes.append(f"From 1M to 10M synthetic rows the run's seconds grow {growth:.1f}x.")
    hundred = by.get("synthetic100m")
    if ten is not None and hundred is not None:
        growth = hundred["seconds"] / ten["seconds"]
        notes.append(f"From 10M to 100M synthetic rows the run's seconds grow {growth:.1f}x.")
    dates = sorted({m["date"] for m in fig["runs"]})
    notes.append(
        f"Measured on {', '.join(dates)} on {fig['environment']['cpus']} cores shared with other "
        "jobs; load: the 1-minute load average when the input was done (above the core count, "
        "its seconds are inflated)."
    )
    parts = [_table(head, rows), " ".join(notes), scale_targets(fig, before)]
    if before is not None:
        parts.append(
            f"Before: `benchmarks/results/scale_before.json` ({before['environment']['date']}), "
            "recorded by `python benchmarks/bench_scale.py --before`."
        )
    ncp = scale_ncp(fig, before)
    if ncp:
        parts.append(ncp)
    return "\n\n".join(parts) + "\n"


def _duckdb_own(m: dict[str, Any]) -> str:
    """DuckDB's own peak memory and spill of an input's processes, with its memory cap."""
    if "duckdb_memory_mb" not in m:
        return DASH
    cap = f" ({m['memory_limit']})" if "memory_limit" in m else ""
    return f"{m['duckdb_memory_mb']:,.0f} / {m['duckdb_spill_mb']:,.0f}{cap}"


def _runs(fig: dict[str, Any]) -> int:
    return max((len(m["process_seconds"]) for m in fig["runs"] if "process_seconds" in m), default=0)


def scale() -> str:
    """The scale figures with the baseline's beside them (bench_scale.py)."""
    return scale_page(record.read("scale"), scale_before()).strip()


def scale_utility() -> str:
    """Block mode against one exact block, NCP and seconds."""
    fig = record.read("scale_utility")
    rows = [
        [
            r["input"],
            str(r["k"]),
            f"{100 * r['exact_ncp']:.2f} % ({r['exact_seconds']:.1f} s)",
            f"{100 * r['blocks_ncp']:.2f} % ({r['blocks_seconds']:.1f} s)",
            f"{r['blocks_ncp'] / r['exact_ncp']:.3f}",
        ]
        for r in fig["runs"]
    ]
    ratios = [r["blocks_ncp"] / r["exact_ncp"] for r in fig["runs"]]
    speed = [r["exact_seconds"] / r["blocks_seconds"] for r in fig["runs"]]
    summary = (
        f"Block mode's NCP is at most {100 * max(max(ratios) - 1, 0):.1f} % above exact mode's and up "
        f"to {100 * max(1 - min(ratios), 0):.0f} % below it, in {min(speed):.0f}-{max(speed):.0f}x less time."
    )
    return _table(["input", "k", "exact NCP", "blocks NCP", "blocks / exact"], rows) + "\n\n" + summary


def wide() -> str:
    """Wide tables: every stage's seconds as categorical QIs are added, and the previous
    build's on the same inputs when its figures were recorded (wide_before.json)."""
    fig = record.read("wide")
    stages = ("stats", "write", "verify")
    rows = [
        [
            f"{m['rows']:,}",
            str(m["qis"]),
            m["algorithm"],
            f"{m['seconds']:.2f}",
            *(f"{m['stages'][s]:.2f}" for s in stages),
            f"{sum(v for s, v in m['stages'].items() if s not in stages):.2f}",
            f"{100 * m['ncp']:.2f} %",
        ]
        for m in fig["runs"]
    ]
    head = ["rows", "categorical QIs", "algorithm", "seconds", *stages, "other stages", "total NCP"]
    loads = [m["load_average"][0] for m in fig["runs"]]
    text = _table(head, rows) + (
        f"\n\nMeasured on {fig['environment']['date']}, ending at load averages "
        f"{min(loads):.1f}-{max(loads):.1f} on {fig['environment']['cpus']} cores."
    )
    try:
        before = {(m["rows"], m["qis"]): m for m in record.read("wide_before")["runs"]}
    except FileNotFoundError:
        return text
    pairs = [before[(m["rows"], m["qis"])] for m in fig["runs"] if (m["rows"], m["qis"]) in before]
    if pairs:
        writes = ", ".join(f"{b['stages']['write']:.2f} s at {b['qis']} QIs" for b in pairs)
        runs = ", ".join(f"{b['seconds']:.2f} s" for b in pairs)
        text += (
            "\n\nThe previous build on the same inputs (`benchmarks/results/wide_before.json`): "
            f"write {writes}; the whole run {runs}."
        )
    return text


def privacy_a() -> str:
    """Setting A of bench_privacy.py: NCP and suppressed rows per algorithm and criterion,
    beside ARX's figures."""
    import bench_privacy

    fig = record.read("privacy")
    return bench_privacy.table_a(fig["setting_a"]) + (
        f"\n\nMeasured on {fig['environment']['date']} ({fig['environment']['cpus']} cores); "
        "every release verified in SQL against k and its criterion before it was counted."
    )


def privacy_b() -> str:
    """Setting B of bench_privacy.py: the background-knowledge grids."""
    import bench_privacy

    fig = record.read("privacy_b")
    return bench_privacy.table_b(fig).strip()


def privacy_scale() -> str:
    """k alone against l = 3 on the synthetic population (bench_privacy.py --scale)."""
    fig = record.read("privacy_scale")
    rows = []
    for key, label in (("k", "k = 10 alone"), ("l3", "k = 10, distinct l = 3")):
        runs = fig[key]
        secs = sorted(r["seconds"] for r in runs)
        rows.append(
            [
                label,
                ", ".join(f"{r['seconds']:.2f}" for r in runs),
                f"{secs[len(secs) // 2]:.2f}",
                f"{max(r['peak_rss_mb'] for r in runs):,.0f} MB",
                f"{100 * runs[0]['ncp']:.2f} %",
                f"{runs[0]['suppressed']:,}",
            ]
        )
    med = {k: sorted(r["seconds"] for r in fig[k])[len(fig[k]) // 2] for k in ("k", "l3")}
    head = ["run", "seconds (each run)", "median", "peak memory", "total NCP", "suppressed"]
    return _table(head, rows) + (
        f"\n\n{fig['rows']:,} rows; l = 3 takes {med['l3'] / med['k']:.2f}x the time of k alone "
        f"(median of {len(fig['k'])} runs each, alternating; measured on {fig['environment']['date']}, "
        f"load average {fig['environment']['load_average'][0]:.1f} on {fig['environment']['cpus']} cores "
        "at the end)."
    )


def scale_criteria(name: str) -> Callable[[], str]:
    """Each criterion's whole runs at scale on each engine (bench_scale_criteria.py)."""

    def render() -> str:
        import bench_scale_criteria

        fig = record.read(name)
        env = fig["environment"]
        load = ", ".join(f"{x:g}" for x in env["load_average"])
        verified = bench_scale_criteria.verify_lines(fig["results"])
        return (
            "\n".join(bench_scale_criteria.table_lines(fig["results"]))
            + ("\n\n" + "\n".join(verified).rstrip("\n") if verified else "")
            + f"\n\n_k = {fig['k']}; measured {env['date']} on {env['cpus']} cores (load average {load} at"
            + " the end); one run each, a whole process._"
        )

    return render


def evaluate() -> str:
    """evaluate's and report's seconds, memory and figures at each size (bench_evaluate.py)."""
    import bench_evaluate

    fig = record.read("evaluate")
    env = fig["environment"]
    load = ", ".join(f"{x:g}" for x in env["load_average"])
    return (
        bench_evaluate.table(fig["runs"])
        + f"\n\n_Measured {env['date']} on {env['cpus']} cores (load average {load} at the end),"
        + " DuckDB; each command a whole process, memory its peak resident set._"
    )


def refresh() -> str:
    """Incremental releases: the refreshes of a table that grows, against anonymizing it
    whole each day (bench_refresh.py)."""
    import bench_refresh

    fig = record.read("refresh")
    env = fig["environment"]
    load = ", ".join(f"{x:g}" for x in env["load_average"])
    return (
        bench_refresh.table(fig["runs"])
        + f"\n\n_Measured {env['date']} on {env['cpus']} cores (load average {load} at the end), "
        + f"DuckDB, in one process (peak RSS {fig['peak_rss_gb']:.2f} GB); {fig['loads']} loads after "
        + "the first half._"
    )


def kmap() -> str:
    """k-map and delta-presence: samples of Adult against Adult as their population
    (bench_kmap.py)."""
    import bench_kmap

    fig = record.read("kmap")
    env = fig["environment"]
    load = ", ".join(f"{x:g}" for x in env["load_average"])
    return (
        bench_kmap.table(fig["runs"])
        + f"\n\n_Measured {env['date']} on {env['cpus']} cores (load average {load} at the end), "
        + f"DuckDB, in one process (peak RSS {fig['peak_rss_gb']:.2f} GB); every release verified in SQL._"
    )


SECTIONS: dict[str, Callable[[], str]] = {
    "paper-A": lambda: paper_setting("A", {"sbca": "sbca (default)"}),
    "paper-B": lambda: paper_setting("B", {"sbca": "sbca (default, `auto` mode)"}),
    "utility": utility_adult,
    "synthetic": utility_synthetic,
    "scale": scale,
    "scale-utility": scale_utility,
    "wide": wide,
    "privacy-A": privacy_a,
    "privacy-B": privacy_b,
    "privacy-scale": privacy_scale,
    "scale-criteria": scale_criteria("scale_criteria"),
    "scale-criteria-10m": scale_criteria("scale_criteria_10m"),
    "scale-criteria-spark": scale_criteria("scale_criteria_spark"),
    "evaluate": evaluate,
    "refresh": refresh,
    "kmap": kmap,
}


def render(text: str) -> str:
    """``text`` with every ``<!-- bench:NAME -->`` block replaced by its rendering."""

    def block(match: re.Match[str]) -> str:
        name = match.group(1)
        if name not in SECTIONS:
            raise KeyError(f"a page names an unknown benchmark table: {name}")
        return f"<!-- bench:{name} -->\n{SECTIONS[name]()}\n<!-- /bench:{name} -->"

    return re.sub(r"<!-- bench:([\w-]+) -->\n.*?<!-- /bench:\1 -->", block, text, flags=re.S)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="exit 1 if a page is not up to date")
    parser.add_argument("--page", type=Path, action="append", help="a page to render (default: both)")
    args = parser.parse_args(argv)
    stale = 0
    for page in args.page or PAGES:
        text = page.read_text()
        rendered = render(text)
        if args.check:
            if rendered != text:
                print(f"{page} differs from the benchmark JSON; run python benchmarks/report.py")
                stale = 1
        else:
            page.write_text(rendered)
    return stale


if __name__ == "__main__":
    raise SystemExit(main())
