"""What a release keeps for machine learning: total NCP, the classification metric CM and a
model's accuracy on releases of Adult made with and without ``--target income``.

    python benchmarks/bench_ml.py [--ks 5,10,25,50,100] [--classifier gbt] [--json FILE]

Adult's 30,162 clean rows, its 8 QIs and income (released verbatim: the target). For each k:
the default algorithm, the default with ``--target income``, k-member, class-aware k-member
(DPPSCT: k-member with ``--target``) and Mondrian (with and without the target). Every
release is written and verified by ``anonymize`` before it is measured; CM and class purity
come from ``evaluate --target`` (SQL), the model utility from ``evaluate --model`` (a seeded
70/30 split of the input's rows; the classifier trained on the release and on the original
and both scored on the original's test rows). Prints a Markdown table;
benchmarks/results/ml.md and ml.json keep a run.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

import duckdb

sys.path.insert(0, str(Path(__file__).resolve().parent))
import datasets

from sbc_sql import anonymize, evaluate
from sbc_sql.cluster.registry import DEFAULT_TARGET_WEIGHT

TABLE = "adult"
TARGET = "income"

#: (row label, algorithm, with the target)
ROWS = [
    ("default", "sbca", False),
    ("default --target", "sbca", True),
    ("k-member", "kmember", False),
    ("DPPSCT (k-member --target)", "kmember", True),
    ("Mondrian", "mondrian", False),
    ("Mondrian --target", "mondrian", True),
]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ks", default="5,10,25,50,100")
    parser.add_argument("--classifier", default="gbt", choices=["gbt", "logistic"])
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args()
    ks = [int(k) for k in args.ks.split(",")]
    qi = datasets.ADULT_QIS_8
    results = []
    with tempfile.TemporaryDirectory() as tmp:
        path = str(Path(tmp) / "adult.duckdb")
        with duckdb.connect(path) as con:
            n = datasets.load_adult(con, TABLE, columns=[*qi, TARGET])
        for k in ks:
            for label, algorithm, aware in ROWS:
                t = time.perf_counter()
                with anonymize(
                    path,
                    TABLE,
                    k,
                    qi=qi,
                    keep=[TARGET],
                    output="rel",
                    replace=True,
                    algorithm=algorithm,
                    target=TARGET if aware else None,
                ) as run:
                    assert run.verdict is not None and run.verdict.ok and run.measures is not None
                    ncp = run.measures.total_ncp
                seconds = time.perf_counter() - t
                e = evaluate(
                    path, TABLE, "rel", target=TARGET, model=True, classifier=args.classifier, queries=0
                )
                results.append(
                    {
                        "k": k,
                        "release": label,
                        "algorithm": algorithm,
                        "target": aware,
                        "seconds": round(seconds, 3),
                        "total_ncp": ncp,
                        "cm": e.cm,
                        "class_purity": e.class_purity,
                        "accuracy_release": e.model_accuracy_release,
                        "accuracy_original": e.model_accuracy_original,
                        "accuracy_ratio": e.model_accuracy_ratio,
                        "f1_ratio": e.model_f1_ratio,
                    }
                )
                print(
                    f"k={k} {label}: NCP {ncp:.4f} CM {e.cm:.4f} acc ratio {e.model_accuracy_ratio:.3f}",
                    file=sys.stderr,
                )
    if args.json:
        args.json.write_text(json.dumps({"rows": n, "results": results}, indent=2) + "\n")
    print(f"# Releases for machine learning: Adult ({n:,} rows, 8 QIs), target {TARGET}\n")
    print(
        f"`python benchmarks/bench_ml.py --ks {args.ks} --classifier {args.classifier}`: every release "
        f"written and verified by `anonymize`; `--target` at its default weight {DEFAULT_TARGET_WEIGHT:g}; "
        "CM and purity by `evaluate --target` in SQL; accuracy by `evaluate --model` (seed 0, 70/30 split, "
        "both models scored on the original's test rows).\n"
    )
    head = ["k", "release", "total NCP", "x default", "CM", "class purity", "accuracy", "accuracy ratio"]
    print("| " + " | ".join([*head, "F1 ratio", "seconds"]) + " |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    base: dict[int, float] = {}
    for r in results:
        if r["release"] == "default":
            base[r["k"]] = r["total_ncp"]
        print(
            f"| {r['k']} | {r['release']} | {r['total_ncp']:.4f} | {r['total_ncp'] / base[r['k']]:.3f} | "
            f"{r['cm']:.4f} | {r['class_purity']:.4f} | {r['accuracy_release']:.4f} | "
            f"{r['accuracy_ratio']:.3f} | {r['f1_ratio']:.3f} | {r['seconds']:.2f} |"
        )
    original = results[0]["accuracy_original"] if results else None
    print(f"\nThe model trained on the original scores accuracy {original:.4f} on the same test rows.")


if __name__ == "__main__":
    main()
