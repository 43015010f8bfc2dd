"""Background-knowledge benchmark: kinc, kagg and beta-ge on samples of UCI Adult.

Setting: 4,000 rows drawn without replacement from the 30,162 clean rows (one sample per
seed), QIs age, sex, education, occupation sensitive; J = 0.8 bits, beta = 3 (enhanced),
k = 5, naive-Bayes background knowledge, rescue on (the tool's default) and off (the
algorithms as first published). Each release goes through the full pipeline (verified in
SQL) and is evaluated: GCP / (n d) with rows not released costing 0, the same with RGCP
(k_R = 2, n_R = 4), record linkage RL in % of n, rows not released, the mean and smallest
class, and seconds of the whole run.

Writes benchmarks/results/background.md.

    python benchmarks/bench_background.py               # seeds 0, 1, 2: about a minute
    python benchmarks/bench_background.py --seeds 0
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import duckdb
import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.append(str(Path(__file__).resolve().parents[1]))

import datasets

import sbc_sql
from sbc_sql.cluster.background.options import BackgroundOptions
from sbc_sql.cluster.background.run import background_run
from sbc_sql.privacy.criteria import rule_of
from sbc_sql.quality.evaluate import evaluate

ALGORITHMS = ("kinc", "kagg", "beta-ge")
COLUMNS = ["age", "sex", "education", "occupation"]
OUT = Path(__file__).resolve().parent / "results" / "background.md"


def sample(con: duckdb.DuckDBPyConnection, seed: int, rows: int) -> None:
    """Table ``t``: ``rows`` clean Adult rows drawn with ``seed``, in file order."""
    datasets.load_adult(con, "adult", columns=COLUMNS)
    n = con.execute("SELECT count(*) FROM adult").fetchone()[0]
    pick = np.sort(np.random.default_rng(seed).choice(n, rows, replace=False))
    con.execute("CREATE OR REPLACE TEMP TABLE pick AS SELECT unnest($1::BIGINT[]) AS i", [pick.tolist()])
    con.execute(
        "CREATE OR REPLACE TABLE t AS SELECT a.* EXCLUDE (i) FROM "
        "(SELECT row_number() OVER () - 1 AS i, * FROM adult) a JOIN pick USING (i) ORDER BY i"
    )
    con.execute("COMMENT ON COLUMN t.occupation IS 'sbc:sensitive'")


def run(con: duckdb.DuckDBPyConnection, algorithm: str, rescue: bool) -> dict[str, float]:
    if not rescue:
        # the command line always rescues: the literal algorithms are run directly
        return literal(con, algorithm)
    output = f"r_{algorithm.replace('-', '_')}"
    start = time.perf_counter()
    result = sbc_sql.anonymize(
        con,
        "t",
        5,
        output=output,
        algorithm=algorithm,
        beta_likeness=3.0,
        bk_threshold=0.8,
        max_suppression=0.5,
        replace=True,
    )
    assert result.verdict is not None and result.verdict.ok
    seconds = time.perf_counter() - start
    e = evaluate(con, "t", output, sensitive="occupation", queries=0)
    n = e.n_rows
    return {
        "gcp": e.gcp - e.suppressed / n,
        "rgcp": e.rgcp,
        "rl": 100 * e.record_linkage_share,
        "removed": e.suppressed,
        "mean": e.mean_class,
        "smallest": e.smallest_class,
        "seconds": seconds,
    }


def literal(con: duckdb.DuckDBPyConnection, algorithm: str) -> dict[str, float]:
    """The algorithm with rescue and the rare-aware refinement off, scored in numpy."""
    from sbc_sql.cluster.model import QIData
    from sbc_sql.cluster.ncp import ncp_per_qi
    from sbc_sql.cluster.sensitive import Sensitive

    df = con.execute("SELECT * FROM t").df()
    codes = [np.unique(df[c], return_inverse=True) for c in ("sex", "education", "occupation")]
    age = df["age"].to_numpy(dtype=np.float64)
    occ = codes[2][1].astype(np.int32)
    data = QIData(
        ("age", "sex", "education"),
        (True, False, False),
        (age, codes[0][1].astype(np.int32), codes[1][1].astype(np.int32)),
        (float(age.min()), np.nan, np.nan),
        (float(age.max()), np.nan, np.nan),
        (0, len(codes[0][0]), len(codes[1][0])),
        (1.0, 1.0, 1.0),
        sensitive=Sensitive(("occupation",), (occ,), (np.bincount(occ),), (False,)),
    )
    start = time.perf_counter()
    labels, _, _, _ = background_run(
        algorithm,
        data,
        5,
        rule_of(beta_likeness=3.0),
        BackgroundOptions(threshold=0.8, rescue=False, rare_aware=False),
    )
    seconds = time.perf_counter() - start
    removed = int((labels < 0).sum())
    sizes = np.bincount(labels[labels >= 0]) if removed < len(labels) else np.zeros(1)
    return {
        "gcp": float(ncp_per_qi(data, labels).mean()) - removed / len(labels),
        "rgcp": float("nan"),
        "rl": float("nan"),
        "removed": removed,
        "mean": float(sizes.mean()),
        "smallest": float(sizes.min()),
        "seconds": seconds,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", default="0,1,2", help="comma-separated sample seeds")
    parser.add_argument("--rows", type=int, default=4000)
    args = parser.parse_args(argv)
    lines = [
        "# Background knowledge: kinc, kagg, beta-ge on Adult samples",
        "",
        f"{args.rows:,} rows per sample of the 30,162 clean Adult rows; QIs age, sex, education; "
        "occupation sensitive; J = 0.8 bits, beta = 3 (enhanced), k = 5, naive-Bayes knowledge. "
        "GCP and RGCP are divided by n d (a row not released costs 0 in GCP); RL in % of n. "
        "'default': rescue and rare-aware refinement on (verified releases through the "
        "pipeline); 'literal': both off (scored in numpy, no RGCP or RL).",
        "",
        "| sample | variant | algorithm | GCP/nd | RGCP/nd | RL % | not released | mean class | min | s |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for seed in (int(s) for s in args.seeds.split(",")):
        con = duckdb.connect()
        sample(con, seed, args.rows)
        for rescue in (True, False):
            for algorithm in ALGORITHMS:
                r = run(con, algorithm, rescue)
                lines.append(
                    f"| {seed} | {'default' if rescue else 'literal'} | {algorithm} | {r['gcp']:.3f} | "
                    f"{r['rgcp']:.3f} | {r['rl']:.2f} | {int(r['removed']):,} | {r['mean']:.2f} | "
                    f"{int(r['smallest'])} | {r['seconds']:.2f} |"
                )
                print(lines[-1], flush=True)
        con.close()
    OUT.write_text("\n".join(lines) + "\n", encoding="utf-8")
    print(f"wrote {OUT}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
