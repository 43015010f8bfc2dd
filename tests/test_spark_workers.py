"""The Spark engine clusters in its workers with privacy criteria, per-column limits and a
target: the driver holds the table's facts (counts per sensitive value and label) and a
sample of its QIs, never its rows. A session whose driver may receive a quarter of a
megabyte from a job anonymizes a table six times that size with each criterion, limits
and a target (tests/spark_bounded.py, in a process of its own); the rows the blocks leave
are placed across blocks in rounds of groups, and those no group places are suppressed
for the reason ``unplaced``, within --max-suppression or refused.

Every release is verified in Spark's SQL before it is written (k, each criterion on every
class, the limits): the runs below succeed only if it passed.
"""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from conftest import spark_master
from helpers import ROOT
from spark_bounded import RUNS, patients

import sbc_sql
from sbc_sql.cluster import distributed
from sbc_sql.errors import InputError

ROLES = {"qi": ["age", "weight", "sex", "zip"], "sensitive": ["dx"], "keep": ["id", "band"]}


def has_spark() -> str | None:
    """Why Spark cannot run here (None: it can)."""
    if importlib.util.find_spec("pyspark") is None:
        return "pyspark is not installed (pip install '.[spark]')"
    if shutil.which("java") is None and not os.environ.get("JAVA_HOME"):
        return "no Java (Spark needs Java 17 or later)"
    return None


@pytest.mark.spark
@pytest.mark.slow
def test_the_driver_never_holds_the_rows(tmp_path: Path) -> None:
    missing = has_spark()
    if missing:
        if os.environ.get("SBC_SQL_REQUIRE_SPARK") == "1":
            pytest.fail(f"no Spark for the tests: {missing}")
        pytest.skip(f"no Spark for the tests: {missing}")
    n = 30_000
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(ROOT / "tests"), os.environ.get("PYTHONPATH", "")]),
    }
    master = spark_master()
    env.setdefault("PYSPARK_PYTHON", sys.executable)
    done = subprocess.run(
        [sys.executable, str(ROOT / "tests" / "spark_bounded.py"), str(tmp_path), str(n), master],
        capture_output=True,
        text=True,
        env=env,
        timeout=1200,
    )
    said = [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")]
    assert done.returncode == 0, done.stderr[-3000:]
    sizes, *runs, refused = said
    # the table is six times what the driver may receive from a job
    assert sizes["table_bytes"] > 5 * sizes["limit_bytes"]
    assert [r["run"] for r in runs] == list(RUNS)
    for r in runs:
        # verified in Spark's SQL (the run fails otherwise), every row released or suppressed
        assert r["ok"] and r["smallest"] >= 5
        assert r["released"] + sum(r["suppressed_by"].values()) == n
    l_run, t_run, beta_run = runs
    assert l_run["achieved"]["l_diversity"] >= 2 and l_run["facts"]["limits_broken"] == 0
    assert t_run["achieved"]["t_closeness"] <= 0.25
    assert beta_run["achieved"]["beta_likeness"] <= 1.5
    # the diagnosis follows the age: t-closeness cuts its blocks from the spread order, planned
    # from the sample with its sensitive codes and the coarse blocks' counts per value, all
    # within the limit (the groups that place the rows blocks of alike rows leave:
    # test_rows_the_blocks_leave_are_placed_by_the_groups)
    assert "of an order spreading the QIs the sensitive values go with" in t_run["clustering"]
    # exact mode clusters in the driver: refused in one line before it brings the rows there
    # (the API names the option mode=..., the command line --mode)
    assert (
        "exact clusters the whole table in the spark engine's driver: its 30,000 rows" in refused["refused"]
    )
    assert "spark.driver.maxResultSize (256k)" in refused["refused"]


@pytest.fixture(scope="module")
def skewed(tmp_path_factory) -> Path:
    """6,000 patients whose diagnosis follows their age nine times in ten."""
    path = tmp_path_factory.mktemp("skewed") / "skewed.parquet"
    pq.write_table(patients(6_000), path)
    return path


def anonymize(spark, source: Path, out: Path, **options) -> tuple[sbc_sql.Result, str]:
    lines: list[str] = []
    with sbc_sql.anonymize(
        spark, str(source), 5, output=str(out), log=lines.append, **ROLES, **options
    ) as result:
        return result, next(line for line in lines if line.startswith("clustering: "))


def test_rows_the_blocks_leave_are_placed_by_the_groups(spark, skewed, tmp_path, monkeypatch) -> None:
    # blocks of the coarse order, whose rows of alike ages the groups must complete (the
    # spread order's blocks would leave few rows)
    monkeypatch.setattr(distributed, "spread_plan", lambda *args: None)
    result, said = anonymize(spark, skewed, tmp_path / "out", t_closeness=0.25)
    assert result.verdict.ok and result.achieved["t_closeness"] <= 0.25
    left, of = (int(x.replace(",", "")) for x in said.split("round 1: ")[1].split(" row(s)")[0].split(" of "))
    assert 0 < left == of and result.suppressed_by == {} and result.measures.released == 6_000


def test_rows_no_group_places_are_suppressed_unplaced(spark, skewed, tmp_path, monkeypatch) -> None:
    # groups of one block: a row its block cannot place with the others finds no class
    monkeypatch.setattr(distributed, "GROUP_ROWS", 1)
    monkeypatch.setattr(distributed, "spread_plan", lambda *args: None)
    result, said = anonymize(spark, skewed, tmp_path / "out", t_closeness=0.25, max_suppression=0.99)
    assert "group(s) of 1 block(s)" in said and "round 2" not in said
    unplaced = result.suppressed_by["unplaced"]
    assert unplaced > 0 and result.suppressed_by == {"unplaced": unplaced}
    assert result.verdict.ok and result.verdict.facts["suppressed"] == unplaced
    assert result.measures.released == 6_000 - unplaced
    with pytest.raises(
        InputError, match=r"cannot be placed in classes that keep t-closeness.*max.suppression"
    ):
        anonymize(spark, skewed, tmp_path / "refused", t_closeness=0.25)


def clinic_table(n: int, seed: int = 0) -> pa.Table:
    """age and sex decide the diagnosis (tests/test_spread.py's clinic); a zip code of 300
    values and a nationality of 5 do not."""
    rng = np.random.default_rng(seed)
    age = rng.integers(0, 90, n)
    sex = rng.integers(0, 2, n)
    peak = (age // 23) * 2 + sex
    dx = np.where(rng.random(n) < 0.5, peak, rng.integers(0, 8, n))
    return pa.table(
        {
            "id": np.arange(n, dtype=np.int64),
            "age": age.astype(float),
            "sex": np.array(["F", "M"])[sex],
            "zip": np.char.add("z", (10_000 + rng.integers(0, 300, n)).astype(str)),
            "nationality": rng.choice(["a", "b", "c", "d", "e"], n, p=[0.8, 0.05, 0.05, 0.05, 0.05]),
            "dx": np.char.add("dx", dx.astype(str)),
        }
    )


def test_t_closeness_cuts_the_blocks_from_the_spread_order(spark, tmp_path, monkeypatch) -> None:
    source = tmp_path / "clinic.parquet"
    pq.write_table(clinic_table(8_000), source)
    roles = {"qi": ["age", "sex", "zip", "nationality"], "sensitive": ["dx"], "keep": ["id"]}

    def run(out: str) -> tuple[sbc_sql.Result, str]:
        lines: list[str] = []
        with sbc_sql.anonymize(
            spark,
            str(source),
            5,
            output=str(tmp_path / out),
            log=lines.append,
            t_closeness=0.2,
            block_rows=400,
            **roles,
        ) as result:
            return result, next(line for line in lines if line.startswith("clustering: "))

    spread, said = run("spread")
    # 20 blocks cut from a sample of 2,000 rows, in the spread order
    assert "of an order spreading the QIs the sensitive values go with (cut from a seeded sample" in said
    assert spread.verdict.ok and spread.achieved["t_closeness"] <= 0.2
    monkeypatch.setattr(distributed, "spread_plan", lambda *args: None)
    coarse, said = run("coarse")
    assert "of the coarse order (cut from" in said and coarse.verdict.ok
    # 25.1 % against 28.9 %
    assert spread.measures.total_ncp < 0.95 * coarse.measures.total_ncp
