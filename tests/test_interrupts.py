"""Ctrl-C and SIGTERM: the run stops promptly, says so in one line with exit code 130, and
leaves nothing behind (its transaction rolled back, its partial export and any database
file it created removed).

The kernels hold their thread until they return, so they read a stop flag: set from another
thread, or by Ctrl-C in the main thread while a kernel runs on the helper thread, it ends
them at their next check. End to end, a real signal goes to a real ``python -m sbc_sql``.
"""

from __future__ import annotations

import contextlib
import importlib.util
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import duckdb
import numpy as np
import pytest
from helpers import checkout_env, ctrl_c_after, file_catalog, pg_rows
from strategies import data_from_arrays

from sbc_sql.cluster import blocks
from sbc_sql.cluster.model import QIData
from sbc_sql.cluster.registry import block_algorithm
from sbc_sql.cluster.sbca_plus.algorithm import sbca_plus

INTERRUPTED = "Interrupted; nothing was written."


def synthetic(n: int, seed: int = 0) -> QIData:
    rng = np.random.default_rng(seed)
    age = np.round(rng.normal(45, 15, n))
    income = np.round(age * 900 + rng.normal(0, 9000, n), -2)
    cats = [(rng.integers(0, card, n), card) for card in (2, 6, 40)]
    return data_from_arrays([age, income], cats)


def stop_after(seconds: float, stop: np.ndarray) -> threading.Timer:
    timer = threading.Timer(seconds, stop.__setitem__, (0, True))
    timer.start()
    return timer


def test_a_stop_flag_ends_one_exact_block_at_once():
    data = synthetic(60_000)
    stop = np.zeros(1, dtype=np.bool_)
    timer = stop_after(0.3, stop)
    started = time.perf_counter()
    with pytest.raises(KeyboardInterrupt):
        sbca_plus(data, 5, stop=stop)  # the greedy pass over 60,000 rows takes seconds
    timer.cancel()
    assert time.perf_counter() - started < 1.5


def test_a_stop_flag_ends_the_blocks_running_and_cancels_the_rest():
    data = synthetic(400_000)
    stop = np.zeros(1, dtype=np.bool_)
    done: list[int] = []
    timer = stop_after(0.3, stop)
    started = time.perf_counter()
    with pytest.raises(KeyboardInterrupt):
        blocks.blocked(
            data,
            5,
            block_algorithm(5, stop=stop),
            block_size=1536,
            workers=2,
            progress=lambda d, t: done.append(d),
            categorical_by="coarse",
            stop=stop,
        )
    timer.cancel()
    assert time.perf_counter() - started < 1.5
    assert len(done) < 260  # of 261 blocks


def test_ctrl_c_reaches_a_kernel_in_the_main_thread():
    data = synthetic(60_000)
    timer = ctrl_c_after(0.3)
    timer.start()
    started = time.perf_counter()
    try:
        with pytest.raises(KeyboardInterrupt):
            sbca_plus(data, 5)
    finally:
        timer.cancel()
    assert time.perf_counter() - started < 1.5


def test_an_unstopped_run_gives_the_same_labels():
    data = synthetic(5_000, seed=3)
    stop = np.zeros(1, dtype=np.bool_)
    assert np.array_equal(sbca_plus(data, 4, stop=stop), sbca_plus(data, 4))
    assert not stop[0]


# ---- end to end: a real signal to a real process ----


def make_people(path: Path, rows: int, note_chars: int = 0) -> Path:
    with duckdb.connect(str(path)) as con:
        con.execute(
            "CREATE TABLE people AS SELECT 18 + (i * 7919) % 83 AS age, 'z' || ((i * 104729) % 500) AS zip, "
            "CASE WHEN i % 3 = 0 THEN 'F' ELSE 'M' END AS sex, 'd' || (i % 13) AS dis, "
            f"repeat('n', {note_chars}) || (i % 7) AS note FROM range({rows}) r(i)"
        )
    return path


def sbc_sql(*args: object) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "sbc_sql", *map(str, args)],
        env=checkout_env(),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def wait_for_line(proc: subprocess.Popen[str], start: str) -> list[str]:
    assert proc.stderr is not None
    seen = []
    for line in proc.stderr:
        seen.append(line)
        if line.startswith(start):
            return seen
    raise AssertionError("".join(seen))


def stopped(proc: subprocess.Popen[str], sig: int) -> tuple[float, str]:
    """Send ``sig``; the seconds until the process ended, and the rest of its stderr."""
    sent = time.perf_counter()
    proc.send_signal(sig)
    _, err = proc.communicate(timeout=60)
    return time.perf_counter() - sent, err


def assert_interrupted(proc: subprocess.Popen[str], err: str) -> None:
    assert proc.returncode == 130, err
    assert err.strip().splitlines()[-1] == INTERRUPTED
    assert "Traceback" not in err and "Error" not in err


@pytest.mark.slow
@pytest.mark.parametrize(("rows", "mode"), [(300_000, "blocks"), (60_000, "exact")])
def test_ctrl_c_while_clustering(tmp_path, rows, mode):
    db = make_people(tmp_path / "p.duckdb", rows)
    before = file_catalog(db)
    # every row clustered (--rows): its distinct tuples would be clustered before the signal
    proc = sbc_sql(
        "anonymize", "--db", db, "--table", "people", "--k", "5", "--sensitive", "dis", "--keep", "note",
        "--mode", mode, "--rows",
    )  # fmt: skip
    wait_for_line(proc, "column 'note'")  # the last role line: the pull, then clustering
    time.sleep(0.5)
    seconds, err = stopped(proc, signal.SIGINT)
    assert "clustering:" not in err  # printed once clustering is done: it was not
    assert_interrupted(proc, err)
    assert seconds < 10, seconds  # about 0.2 s on a 2-core machine (the report's figure)
    assert file_catalog(db) == before


@pytest.mark.slow
def test_sigterm_during_the_export(tmp_path):
    # long notes make the export take a while: the signal lands while it is written
    db = make_people(tmp_path / "p.duckdb", 300_000, note_chars=200)
    out = tmp_path / "release.csv"
    partial = Path(f"{out}.sbc-partial")
    before = file_catalog(db)
    proc = sbc_sql(
        "anonymize", "--db", db, "--table", "people", "--k", "5", "--sensitive", "dis,note", "--out-file", out
    )
    while not partial.exists():
        assert proc.poll() is None, proc.communicate()
        time.sleep(0.002)
    seconds, err = stopped(proc, signal.SIGTERM)
    assert_interrupted(proc, err)
    assert seconds < 10, seconds
    assert not partial.exists() and not out.exists()
    assert file_catalog(db) == before


@pytest.mark.slow
def test_sigint_into_a_new_database_removes_it(tmp_path):
    csv = tmp_path / "p.csv"
    make_people(tmp_path / "source.duckdb", 300_000)
    with duckdb.connect(str(tmp_path / "source.duckdb")) as con:
        con.execute(f"COPY people TO '{csv}'")
    db = tmp_path / "new.duckdb"
    proc = sbc_sql(
        "anonymize", "--db", db, "--table", csv, "--k", "5", "--sensitive", "dis", "--keep", "note"
    )
    wait_for_line(proc, "column 'note'")
    assert db.exists()
    _, err = stopped(proc, signal.SIGINT)
    assert_interrupted(proc, err)
    assert not db.exists() and not Path(f"{db}.wal").exists()


def handles_sigterm(pid: int) -> bool:
    """The process catches SIGTERM: the entry point has installed its handlers."""
    status = Path(f"/proc/{pid}/status").read_text()
    caught = int(next(line for line in status.splitlines() if line.startswith("SigCgt:")).split()[1], 16)
    return bool(caught & (1 << (signal.SIGTERM - 1)))


@pytest.mark.slow
def test_ctrl_c_at_start_up(tmp_path):
    db = make_people(tmp_path / "p.duckdb", 100)
    proc = sbc_sql("anonymize", "--db", db, "--table", "people", "--k", "5", "--sensitive", "dis")
    while not handles_sigterm(proc.pid):  # then the app, or what the command runs, is loading
        assert proc.poll() is None, proc.communicate()
        time.sleep(0.001)
    _, err = stopped(proc, signal.SIGINT)
    assert proc.returncode == 130, err
    assert err == INTERRUPTED + "\n"


#: the server's sessions waiting in pg_sleep (a view that sleeps stands for a long statement)
SLEEPING = "SELECT pid FROM pg_stat_activity WHERE wait_event = 'PgSleep' AND pid <> pg_backend_pid()"
#: the relations of the schema public, to tell that a stopped run left none behind
PUBLIC_RELATIONS = "SELECT relname FROM pg_class WHERE relnamespace = 'public'::regnamespace"


def pg_people(url: str) -> None:
    """The table people (age, zip, dis) of 5,000 rows in the database ``url``."""
    pg_rows(
        url,
        "CREATE TABLE people AS SELECT 18 + (i * 7919) % 83 AS age, 'z' || (i * 104729) % 500 AS zip, "
        "'d' || i % 13 AS dis FROM generate_series(1, 5000) AS s(i)",
    )


def sigterm_while_sleeping(proc: subprocess.Popen[str], url: str) -> tuple[float, str]:
    """Wait until the command's statement sleeps on the server, send SIGTERM; the seconds
    until the process ended and its stderr (the process is killed if the test fails)."""
    try:
        deadline = time.monotonic() + 60
        while not pg_rows(url, SLEEPING):
            assert proc.poll() is None, proc.communicate()
            assert time.monotonic() < deadline, "the command never reached the view's statement"
            time.sleep(0.05)
        sent = time.perf_counter()
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=30)
        return time.perf_counter() - sent, err
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()


@pytest.mark.slow
def test_sigterm_cancels_a_long_postgresql_statement(postgres_url):
    """A view over a slow query (here, one that sleeps): SIGTERM while the run reads it cancels
    the statement on the server, as Ctrl-C does, instead of waiting for its end."""
    pg_people(postgres_url)
    pg_rows(
        postgres_url,
        "CREATE VIEW slow_people AS SELECT p.* FROM people p CROSS JOIN (SELECT pg_sleep(120)) AS slow",
    )
    before = pg_rows(postgres_url, PUBLIC_RELATIONS)
    proc = sbc_sql(
        "anonymize", "--db", postgres_url, "--table", "slow_people", "--k", "5", "--sensitive", "dis"
    )
    seconds, err = sigterm_while_sleeping(proc, postgres_url)
    assert_interrupted(proc, err)
    assert seconds < 5, seconds
    assert pg_rows(postgres_url, SLEEPING) == []  # cancelled on the server, not left running
    assert sorted(pg_rows(postgres_url, PUBLIC_RELATIONS)) == sorted(before)


# ---- evaluate and report: their long statements stop as anonymize's do ----


@pytest.fixture(scope="module")
def released(tmp_path_factory) -> Path:
    """A DuckDB file of 200,000 people and their release at k = 5 (evaluate runs seconds)."""
    db = make_people(tmp_path_factory.mktemp("released") / "p.duckdb", 200_000)
    proc = sbc_sql("anonymize", "--db", db, "--table", "people", "--k", "5", "--sensitive", "dis", "-q")
    _, err = proc.communicate(timeout=600)
    assert proc.returncode == 0, err
    return db


@pytest.mark.slow
@pytest.mark.parametrize(
    ("sig", "step"),
    [
        (signal.SIGINT, "evaluate: coverage and record linkage ..."),
        (signal.SIGTERM, "evaluate: query error"),
    ],
)
def test_evaluate_stops_within_a_second(released, sig, step):
    before = file_catalog(released)
    proc = sbc_sql("evaluate", "--db", released, "--original", "people", "--release", "people_k5")
    wait_for_line(proc, step)
    time.sleep(0.3)
    seconds, err = stopped(proc, sig)
    assert_interrupted(proc, err)
    assert seconds < 3, seconds  # about 0.2 to 0.6 s on a 2-core machine
    assert file_catalog(released) == before


@pytest.mark.slow
def test_report_stops_within_a_second(released, tmp_path):
    before = file_catalog(released)
    out = tmp_path / "report.html"
    proc = sbc_sql(
        "report", "--db", released, "--original", "people", "--release", "people_k5", "-o", out,
        "--curve-k", "none",
    )  # fmt: skip
    wait_for_line(proc, "report: evaluating the release ...")
    time.sleep(1.5)  # inside evaluate's coverage step
    seconds, err = stopped(proc, signal.SIGINT)
    assert_interrupted(proc, err)
    assert seconds < 3, seconds
    assert not out.exists()
    assert file_catalog(released) == before


@pytest.mark.slow
def test_sigterm_cancels_evaluate_on_postgresql_and_drops_its_tables(postgres_url):
    """The release read through a view that sleeps: SIGTERM while evaluate reads it cancels the
    statement on the server, and the evaluation's scratch tables are gone."""
    pg_people(postgres_url)
    proc = sbc_sql(
        "anonymize", "--db", postgres_url, "--table", "people", "--k", "5", "--sensitive", "dis", "-q"
    )
    _, err = proc.communicate(timeout=300)
    assert proc.returncode == 0, err
    pg_rows(
        postgres_url,
        "CREATE VIEW slow_release AS SELECT r.* FROM people_k5 r CROSS JOIN (SELECT pg_sleep(120)) AS slow",
    )
    before = pg_rows(postgres_url, PUBLIC_RELATIONS)
    proc = sbc_sql("evaluate", "--db", postgres_url, "--original", "people", "--release", "slow_release")
    seconds, err = sigterm_while_sleeping(proc, postgres_url)
    assert_interrupted(proc, err)
    assert seconds < 3, seconds
    assert pg_rows(postgres_url, SLEEPING) == []
    assert sorted(pg_rows(postgres_url, PUBLIC_RELATIONS)) == sorted(before)
    assert pg_rows(postgres_url, "SELECT relname FROM pg_class WHERE relname LIKE 'sbc_eval_%'") == []


# ---- Spark: the signal sent to the whole process group, the driver's JVM among it ----


def spark_or_skip() -> None:
    """pyspark and Java, or the test is skipped (failed under SBC_SQL_REQUIRE_SPARK=1)."""
    reason = None
    if importlib.util.find_spec("pyspark") is None:
        reason = "pyspark is not installed (pip install '.[spark]')"
    elif shutil.which("java") is None and not os.environ.get("JAVA_HOME"):
        reason = "no Java (Spark needs Java 17 or later)"
    if reason is not None:
        if os.environ.get("SBC_SQL_REQUIRE_SPARK") == "1":
            pytest.fail(f"no Spark for the tests: {reason}")
        pytest.skip(f"no Spark for the tests: {reason}")


def spark_flags(base: Path) -> list[str]:
    """The Spark engine on two cores, its warehouse and scratch folders under ``base``."""
    return [
        *("--engine", "spark", "--spark-master", "local[2]"),
        *("--spark-conf", "spark.driver.memory=1g"),
        *("--spark-conf", f"spark.sql.warehouse.dir={base / 'warehouse'}"),
        *("--spark-conf", f"spark.local.dir={base / 'local'}"),
    ]


@pytest.fixture(scope="module")
def spark_released(tmp_path_factory) -> tuple[Path, Path]:
    """A Parquet file of 60,000 people and its Spark release at k = 5 (a Parquet folder):
    evaluate's coverage step runs seconds on them."""
    spark_or_skip()
    base = tmp_path_factory.mktemp("spark_released")
    people = base / "people.parquet"
    with duckdb.connect() as con:
        con.execute(
            "COPY (SELECT 18 + (i * 7919) % 83 AS age, 'z' || ((i * 104729) % 500) AS zip, "
            "CASE WHEN i % 3 = 0 THEN 'F' ELSE 'M' END AS sex, 'd' || (i % 13) AS dis "
            f"FROM range(60000) r(i)) TO '{people}' (FORMAT parquet)"
        )
    release = base / "release"
    proc = sbc_sql(
        "anonymize", "-t", people, "-k", "5", "--sensitive", "dis", "-o", release, "-q", *spark_flags(base)
    )
    _, err = proc.communicate(timeout=900)
    assert proc.returncode == 0, err
    return people, release


def descendants(pid: int) -> list[int]:
    """The processes ``pid`` started, and theirs (the driver's JVM)."""
    found: list[int] = []
    for task in Path(f"/proc/{pid}/task").glob("*"):
        with contextlib.suppress(OSError):
            for child in map(int, (task / "children").read_text().split()):
                found += [child, *descendants(child)]
    return found


def running(pid: int) -> bool:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] not in ("Z", "X")  # a zombie has ended


def ignores_sigterm(pid: int) -> bool:
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return False
    ignored = int(next(line for line in status.splitlines() if line.startswith("SigIgn:")).split()[1], 16)
    return bool(ignored & (1 << (signal.SIGTERM - 1)))


def tree(folder: Path) -> list[str]:
    return sorted(str(p.relative_to(folder)) for p in folder.rglob("*")) if folder.exists() else []


def stopped_in_its_group(args: list[object], step: str, after: float, sig: int, base: Path) -> str:
    """Run ``sbc-sql *args`` in a process group of its own (as a terminal runs its foreground
    job), send ``sig`` to the whole group (the driver's JVM too) ``after`` seconds after the
    line ``step``, and check that it stopped within seconds as interrupted, its JVM ended
    and no scratch left in ``base``'s warehouse and local folders; its stderr."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "sbc_sql", *map(str, args), *spark_flags(base)],
        env=checkout_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        start_new_session=True,
    )  # fmt: skip
    try:
        wait_for_line(proc, step)
        jvm = descendants(proc.pid)
        assert any(map(ignores_sigterm, jvm))  # the JVM leaves SIGTERM to the command
        time.sleep(after)
        sent = time.perf_counter()
        os.killpg(proc.pid, sig)
        _, err = proc.communicate(timeout=60)
        seconds = time.perf_counter() - sent
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    assert_interrupted(proc, err)
    assert seconds < 5, seconds  # about 1.5 s on a 2-core machine
    deadline = time.monotonic() + 30
    while any(map(running, jvm)):  # the JVM ends with the command's session
        assert time.monotonic() < deadline, "the driver's JVM outlived the command"
        time.sleep(0.1)
    assert tree(base / "warehouse") == []
    assert not any(p.name.startswith(("spark-", "blockmgr-")) for p in (base / "local").glob("*"))
    return err


@pytest.mark.spark
@pytest.mark.slow
@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
def test_a_signal_to_the_process_group_stops_evaluate_on_spark(spark_released, tmp_path, sig):
    """Ctrl-C in a terminal, or a service manager's SIGTERM, reaches the driver's JVM too: the
    command still cancels its Spark jobs, drops its views in a live session, says it was
    interrupted (not that the driver stopped answering) and leaves no scratch behind."""
    people, release = spark_released
    given = tree(release.parent)
    args: list[object] = ["evaluate", "--original", people, "--release", release]
    err = stopped_in_its_group(args, "evaluate: coverage and record linkage ...", 0.5, sig, tmp_path)
    assert "coverage and record linkage done" not in err  # the signal landed inside the step
    assert tree(release.parent) == given


@pytest.mark.spark
@pytest.mark.slow
@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
def test_a_signal_to_the_process_group_stops_report_on_spark(spark_released, tmp_path, sig):
    people, release = spark_released
    given = tree(release.parent)
    page = tmp_path / "page" / "report.html"
    page.parent.mkdir()
    args: list[object] = [
        *("report", "--original", people, "--release", release, "-o", page, "--curve-k", "none"),
    ]
    stopped_in_its_group(args, "report: evaluating the release ...", 1.5, sig, tmp_path)
    assert list(page.parent.iterdir()) == []  # no page, nor a partial one
    assert tree(release.parent) == given


@pytest.mark.slow
def test_a_spark_error_after_an_interruption_is_the_interruption(spark):
    """Once Ctrl-C stopped a call, what fails in the clean-up after it (a job it cancelled, a
    driver a signal stopped too) is reported as the interruption, not as a Spark error."""
    from py4j.protocol import Py4JError

    from sbc_sql.engines.spark import SparkEngine
    from sbc_sql.errors import EngineError

    engine = SparkEngine(spark)

    def call(err: BaseException) -> None:
        with engine._driver("dropping view 'v'"):
            raise err

    lost = Py4JError("An error occurred while calling o1.sql")
    try:
        with pytest.raises(EngineError, match="the Spark driver stopped answering"):
            call(lost)
        with pytest.raises(KeyboardInterrupt):
            call(KeyboardInterrupt())
        with pytest.raises(KeyboardInterrupt):
            call(lost)
    finally:
        engine.close()


@pytest.mark.slow
def test_ctrl_c_cancels_a_long_spark_statement_and_the_next_one_gets_its_own_answer(spark):
    """Ctrl-C during a long statement of a caller's session: the engine's job is cancelled at
    once, and the statements after it (the clean-up's) run and read their own answers, not
    the interrupted call's."""
    from sbc_sql.engines.spark import SparkEngine

    engine = SparkEngine(spark)
    tracker = spark.sparkContext.statusTracker()
    timer = ctrl_c_after(1.0)
    try:
        timer.start()
        started = time.perf_counter()
        with pytest.raises(KeyboardInterrupt):
            engine.fetch_all("SELECT sum(hash(id)) FROM range(0, 200000000000, 1, 2)")  # minutes
        assert time.perf_counter() - started < 5
        assert engine.fetch_all("SELECT 41 + 1") == [(42,)]
        engine.execute("CREATE TABLE sbc_interrupted AS SELECT 1 AS one")
        engine.execute("DROP TABLE sbc_interrupted")
        assert not spark.catalog.tableExists("sbc_interrupted")
        interrupted = [j for j in tracker.getActiveJobsIds() if tracker.getJobInfo(j).status == "RUNNING"]
        assert interrupted == []  # its job cancelled, even one it was still planning
    finally:
        timer.cancel()
        engine.close()
