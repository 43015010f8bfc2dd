"""Run by tests/test_spark_workers.py in a process of its own: a Spark session whose driver
may receive at most :data:`LIMIT` from a job (``spark.driver.maxResultSize``), and a
table of patients several times that size, anonymized with each criterion, per-column
limits and a target. A run that brought the rows into the driver would fail there; each
run prints what it gave as one line of JSON.

    python tests/spark_bounded.py FOLDER ROWS MASTER
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

import sbc_sql
from sbc_sql.engines.spark import SparkEngine
from sbc_sql.errors import InputError

#: spark.driver.maxResultSize of the session: 30,000 patients take about 1.6 MiB as Arrow,
#: the blocks' sample of their QIs (100 rows a block, 6.5 % of them; with t-closeness and
#: beta-likeness their diagnoses' codes too) about 80 KiB
LIMIT = "256k"
LIMIT_BYTES = 256 << 10
#: the runs: criteria, limits and a target, each verified in Spark's SQL before it is written
RUNS = {
    "l-diversity, limits and a target": {
        "l_diversity": 2,
        "max_width": "age=25",
        "max_values": "zip=40",
        "target": "band",
    },
    "t-closeness": {"t_closeness": 0.25},
    "beta-likeness": {"beta_likeness": 1.5},
}
ROLES = {
    "qi": ["age", "weight", "sex", "zip"],
    "sensitive": ["dx"],
    "keep": ["id", "band"],
    "max_suppression": 0.05,
}
K = 5


def patients(n: int, seed: int = 11) -> pa.Table:
    """``n`` patients whose diagnosis follows their age nine times in ten, so that a block
    of alike rows lacks the other diagnoses and leaves rows to the groups of blocks."""
    rng = np.random.default_rng(seed)
    age = rng.integers(18, 90, n)
    by_age = np.array(["none", "asthma", "diabetes", "flu"])[np.digitize(age, [35, 55, 70])]
    dx = np.where(rng.random(n) < 0.9, by_age, rng.choice(["none", "asthma", "diabetes", "flu"], n))
    return pa.table(
        {
            "id": np.arange(n, dtype=np.int64),
            "age": age.astype(float),
            "weight": np.round(rng.normal(75, 12, n), 1),
            "sex": rng.choice(["F", "M"], n),
            "zip": np.char.add("z", rng.integers(1000, 1120, n).astype(str)),
            "band": rng.choice(["low", "mid", "high"], n),
            "dx": dx,
        }
    )


def main(folder: Path, n: int, master: str) -> None:
    table = patients(n)
    source = folder / "lake.parquet"
    pq.write_table(table, source)
    engine = SparkEngine.connect(
        master=master,
        conf={
            "spark.driver.maxResultSize": LIMIT,
            # a table Spark broadcasts to a join is collected in the driver first: the
            # release's own joins (the labels, 16 bytes a row) are kept below the limit
            "spark.sql.autoBroadcastJoinThreshold": "64k",
            "spark.sql.shuffle.partitions": "2",
            "spark.default.parallelism": "2",
            "spark.sql.warehouse.dir": str(folder / "warehouse"),
            "spark.driver.extraJavaOptions": f"-Dderby.system.home={folder}",
        },
    )
    session = engine.session
    print(json.dumps({"table_bytes": table.nbytes, "limit_bytes": LIMIT_BYTES}), flush=True)
    for name, options in RUNS.items():
        lines: list[str] = []
        out = folder / name.replace(" ", "_").replace(",", "")
        with sbc_sql.anonymize(
            session, str(source), K, output=str(out), log=lines.append, **ROLES, **options
        ) as result:
            said = next(line for line in lines if line.startswith("clustering: "))
            print(
                json.dumps(
                    {
                        "run": name,
                        "ok": result.verdict.ok,
                        "facts": {
                            k: v for k, v in result.verdict.facts.items() if isinstance(v, int | float)
                        },
                        "achieved": result.achieved,
                        "suppressed_by": result.suppressed_by,
                        "released": result.measures.released,
                        "smallest": result.measures.smallest,
                        "clustering": said,
                    }
                ),
                flush=True,
            )
    # what clusters only in the driver is refused before it brings the rows there
    try:
        sbc_sql.anonymize(
            session, str(source), K, output=str(folder / "exact"), mode="exact", log=None, **ROLES
        )
    except InputError as refused:
        print(json.dumps({"refused": str(refused)}), flush=True)
    engine.close()


if __name__ == "__main__":
    main(Path(sys.argv[1]), int(sys.argv[2]), sys.argv[3])
