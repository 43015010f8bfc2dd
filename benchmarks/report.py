"""Render the benchmark tables of README.md and benchmarks/README.md from the JSON files the
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
import re
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import record

ROOT = Path(__file__).resolve().parents[1]
#: the files whose tables are rendered
PAGES = (ROOT / "README.md", ROOT / "benchmarks" / "README.md")
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


def scale() -> str:
    """End-to-end runs on Adult and synthetic populations, with the process times on Adult."""
    fig = record.read("scale")
    rows = []
    for m in fig["runs"]:
        stages = ", ".join(f"{s} {v:.2f}" for s, v in m["stages"].items())
        rows.append(
            [
                m["input"],
                f"{m['rows']:,}",
                str(m["k"]),
                m["mode"],
                f"{m['seconds']:.2f}",
                f"{m['peak_rss_mb']:.0f}",
                f"{100 * m['ncp']:.2f} %",
                f"{m['seconds'] / m['group_by_seconds']:.0f}x ({m['group_by_seconds']:.3f} s)",
                stages,
            ]
        )
    head = ["input", "rows", "k", "mode", "seconds", "peak RSS MB", "total NCP", "vs GROUP BY", "stages (s)"]
    text = _table(head, rows)
    notes = [f"Synthetic runs cap DuckDB at `--memory-limit {fig['memory_limit']}`."]
    adult = [m for m in fig["runs"] if "process_seconds" in m]
    if adult:
        m = adult[0]
        notes.append(f"Adult in Python: {_spread(m['runs_seconds'])}.")
        notes.append(
            f"The whole `sbc-sql anonymize` process on Adult (k = {m['k']}): "
            f"{_spread(m['process_seconds'])} with the kernels compiled at install "
            f"({m['process_kernels']}), against {_spread(m['process_jit_seconds'])} for the same "
            "processes on numba's JIT (`SBC_SQL_KERNELS=jit`)."
        )
    by_rows = {m["rows"]: m for m in fig["runs"] if m["input"] == "synthetic"}
    if 1_000_000 in by_rows and 10_000_000 in by_rows:
        growth = by_rows[10_000_000]["seconds"] / by_rows[1_000_000]["seconds"]
        notes.append(f"From 1M to 10M rows the time grows {growth:.1f}x.")
    dates = sorted({m["date"] for m in fig["runs"]})
    notes.append(f"Measured on {', '.join(dates)}.")
    busy = [m for m in fig["runs"] if m.get("load_average", [0])[0] > fig["environment"]["cpus"]]
    if busy:
        loads = ", ".join(f"{m['load_average'][0]:.1f}" for m in busy)
        notes.append(
            f"The machine was shared: {len(busy)} of these runs ended with a load average above "
            f"its {fig['environment']['cpus']} cores ({loads}), so their seconds are inflated."
        )
    return text + "\n\n" + " ".join(notes) + "\n\n" + targets(fig["runs"])


def targets(runs: Sequence[dict[str, Any]]) -> str:
    """The scale targets, each with the figure measured and whether it is met."""
    by = {(m["input"], m["rows"]): m for m in runs}
    adult = by.get(("Adult (in Python)", 30162))
    one, ten = by.get(("synthetic", 1_000_000)), by.get(("synthetic", 10_000_000))
    checks = []
    if adult is not None:
        median = sorted(adult["runs_seconds"])[len(adult["runs_seconds"]) // 2]
        checks.append(("Adult in 0.3 s inside Python", median, 0.3, f"{median:.2f} s"))
        process = sorted(adult["process_seconds"])[len(adult["process_seconds"]) // 2]
        checks.append(("1 s as a process", process, 1.0, f"{process:.2f} s"))
    if one is not None:
        checks.append(("1M in 10 s", one["seconds"], 10.0, f"{one['seconds']:.2f} s"))
    if ten is not None:
        checks.append(("10M in 100 s", ten["seconds"], 100.0, f"{ten['seconds']:.2f} s"))
        rss = ten["peak_rss_mb"] / 1024
        checks.append(("peak RSS under 4 GB at 10M", rss, 4.0, f"{rss:.1f} GB"))
    if one is not None and ten is not None:
        growth = ten["seconds"] / one["seconds"]
        checks.append(("growth from 1M to 10M under 12x", growth, 12.0, f"{growth:.1f}x"))
    met = [f"{label} ({shown})" for label, value, limit, shown in checks if value <= limit]
    missed = [f"{label} ({shown})" for label, value, limit, shown in checks if value > limit]
    lines = []
    if met:
        lines.append("Targets met: " + ", ".join(met) + ".")
    if missed:
        lines.append("Targets missed: " + ", ".join(missed) + ".")
    return " ".join(lines)


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
}


def render(text: str) -> str:
    """``text`` with every ``<!-- bench:NAME -->`` block replaced by its rendering."""

    def block(match: re.Match[str]) -> str:
        name = match.group(1)
        if name not in SECTIONS:
            raise KeyError(f"README names an unknown benchmark table: {name}")
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
