"""sbc-sql on Apache Spark: anonymize a folder of Parquet files and check the release.

    pip install 'sbc-sql[spark]'          # and Java 17 or later
    python examples/spark_job.py --work /tmp/sbc_spark
    spark-submit examples/spark_job.py --work /tmp/sbc_spark

It writes the example database's visits (age, zip, dx: one row per patient, no direct
identifier) as a Parquet folder under --work (a local folder), anonymizes it at k = 5 with the Spark engine
into the folder visits_k5 beside it, verifies that release and prints its figures. Under
spark-submit the session is the one spark-submit started (its --master and --conf hold);
run by python, a local one (local[*]). The same run from the command line:

    sbc-sql anonymize --engine spark -t WORK/visits -o WORK/visits_k5 -k 5 --sensitive dx
"""

from __future__ import annotations

import argparse
import importlib.util
import sys
import tempfile
from pathlib import Path

import sbc_sql


def make_visits(folder: Path, rows: int) -> None:
    """The example database's visits as a Parquet folder, by examples/make_clinic_db.py."""
    here = Path(__file__).resolve().parent
    spec = importlib.util.spec_from_file_location("make_clinic_db", here / "make_clinic_db.py")
    assert spec is not None and spec.loader is not None
    clinic = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(clinic)
    folder.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as scratch:
        argv = ["--rows", str(rows), "--out", f"{scratch}/clinic.duckdb", "--replace"]
        clinic.main([*argv, "--visits", str(folder / "part-0.parquet")])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--work", required=True, help="the folder the input and the release go to")
    parser.add_argument("--rows", type=int, default=1000, help="patients in the input (default 1000)")
    args = parser.parse_args(argv)

    from sbc_sql.engines.spark import SparkEngine

    # sbc-sql's own local session (quiet, its workers on this Python), or under
    # spark-submit the session spark-submit started; a SparkSession of your own works too
    spark = SparkEngine.connect(conf={"spark.sql.shuffle.partitions": "2"})
    work = Path(args.work).resolve()
    source, output = str(work / "visits"), str(work / "visits_k5")
    make_visits(work / "visits", args.rows)
    result = sbc_sql.anonymize(spark, source, 5, output=output, sensitive="dx", qi="age,zip", replace=True)
    print(result)
    verdict = sbc_sql.verify(spark, source, output, 5)
    print(f"{output}: verified {verdict.k}-anonymous: {verdict.ok}")
    print("total NCP:", round(sbc_sql.measure(spark, source, output).as_dict()["total_ncp"], 4))
    spark.close()
    return 0 if verdict.ok else 1


if __name__ == "__main__":
    sys.exit(main())
