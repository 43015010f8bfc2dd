"""docs/metrics.md's picture of the HTML report (docs/report.png): Adult's 30,162 clean rows, its 8
QIs, income as the sensitive column (2-diverse), education_num left out (it determines
education), k = 10; the report at the default curve k, shown in a headless Chromium and
captured from the top.

    python benchmarks/report_screenshot.py [--out docs/report.png] [--html report.html]

Needs Chromium (chromium, chromium-browser or google-chrome on the PATH).
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import duckdb

sys.path.insert(0, str(Path(__file__).resolve().parent))
import datasets

import sbc_sql

ROOT = Path(__file__).resolve().parents[1]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default=str(ROOT / "docs" / "report.png"))
    parser.add_argument("--html", default=None, help="Also keep the page here.")
    parser.add_argument("--width", type=int, default=1000)
    parser.add_argument("--height", type=int, default=2950)
    args = parser.parse_args()
    browser = next(
        (p for n in ("chromium", "chromium-browser", "google-chrome") if (p := shutil.which(n))), None
    )
    if browser is None:
        sys.exit("no Chromium on the PATH")
    with tempfile.TemporaryDirectory() as tmp:
        db = Path(tmp) / "adult.duckdb"
        con = duckdb.connect(str(db))
        rows = datasets.load_adult(con, "adult")
        con.close()
        # education_num gives the QI education away, so it is left out rather than kept
        drop = ["education_num"]
        keep = [c for c in datasets.ADULT_COLUMNS if c not in (*datasets.ADULT_QIS_8, "income", *drop)]
        t = time.perf_counter()
        with sbc_sql.anonymize(
            str(db),
            "adult",
            10,
            qi=datasets.ADULT_QIS_8,
            sensitive="income",
            keep=keep,
            drop=drop,
            l_diversity=2,
            output="adult_k10",
            log=lambda line: None,
        ):
            pass
        print(f"anonymized {rows:,} rows in {time.perf_counter() - t:.1f} s")
        page = Path(args.html) if args.html else Path(tmp) / "report.html"
        t = time.perf_counter()
        sbc_sql.report(str(db), "adult", "adult_k10", page, replace=True, log=print)
        print(f"report in {time.perf_counter() - t:.1f} s")
        command = [browser, "--headless=new", "--disable-gpu", "--hide-scrollbars"]
        if hasattr(os, "geteuid") and os.geteuid() == 0:
            command.append("--no-sandbox")
        command += [
            f"--user-data-dir={Path(tmp) / 'profile'}",
            f"--window-size={args.width},{args.height}",
            f"--screenshot={Path(args.out).resolve()}",
            page.resolve().as_uri(),
        ]
        subprocess.run(command, check=True, capture_output=True, timeout=120)
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
