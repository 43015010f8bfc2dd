"""The SparkSession the Spark engine runs in when the caller gives none: the one running in
this process already, or one built here (``local[*]`` by default; spark-submit's master and
settings under spark-submit) with sbc-sql's settings."""

from __future__ import annotations

import os
import re
import signal
import sys
import threading
from collections.abc import Mapping
from typing import Any

from ...errors import InputError

DEFAULT_MASTER = "local[*]"
#: what a session sbc-sql builds is set to (the caller's own session is used as it is)
SESSION_CONF = {
    "spark.api.mode": "classic",
    "spark.ui.enabled": "false",
    "spark.ui.showConsoleProgress": "false",
    "spark.sql.session.timeZone": "UTC",
}


def _local_cores(master: str) -> int:
    """The cores a local master runs on: local (1), local[N], local[*] (all of them)."""
    every = os.cpu_count() or 1
    found = re.fullmatch(r"local(?:\[(\d+|\*)(?:,\s*\d+)?\])?", master.strip())
    if found is None:
        return every
    threads = found.group(1)
    if threads is None:
        return 1
    return every if threads == "*" else max(int(threads), 1)


def start(master: str | None, conf: Mapping[str, str] | None) -> tuple[Any, bool]:
    """The session to run in, and whether it was built here (and is stopped on close): on
    ``master`` (default local[*]) with ``conf`` (Spark properties) on top of sbc-sql's own
    settings."""
    try:
        from pyspark.sql import SparkSession
    except ImportError:
        raise InputError(
            "--engine spark needs pyspark, which is not installed; pip install 'sbc-sql[spark]'"
        ) from None
    running = SparkSession.getActiveSession()
    if running is not None:
        # one SparkContext per process: a session running already is used as it is
        if master is not None or conf:
            raise InputError(
                "a Spark session runs in this process already, with its own master and "
                "settings; drop --spark-master and --spark-conf"
            )
        return running, False
    # under spark-submit the driver's JVM runs already, with the master and settings
    # given to spark-submit (its --master, --conf), which a master set here would replace
    submitted = "PYSPARK_GATEWAY_PORT" in os.environ
    chosen = master or ("" if submitted else DEFAULT_MASTER)
    # workers must run this Python (the one with sbc-sql's packages); a local master
    # binds to the loopback interface only
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    if chosen.startswith("local"):
        os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    settings = dict(SESSION_CONF)
    if chosen.startswith("local"):
        settings.update({"spark.driver.bindAddress": "127.0.0.1", "spark.driver.host": "127.0.0.1"})
        # Spark's 200 shuffle partitions are for a cluster; on one machine they cost more
        # than the work (200,000 rows: 128 s against 44 s for the whole run at 4)
        settings["spark.sql.shuffle.partitions"] = str(2 * _local_cores(chosen))
    settings.update(conf or {})
    builder = SparkSession.builder.appName("sbc-sql")
    if chosen:
        builder = builder.master(chosen)
    for key, value in settings.items():
        builder = builder.config(key, value)
    main = threading.current_thread() is threading.main_thread()
    previous = signal.getsignal(signal.SIGINT) if main else None
    try:
        session = builder.getOrCreate()
    except Exception as err:
        where = f"on master '{chosen}'" if chosen else "of spark-submit"
        raise InputError(
            f"--engine spark: the Spark session {where} could not start ({type(err).__name__}); "
            "check that Java 17 or later is installed (java -version) and the --spark-master "
            "and --spark-conf values"
        ) from None
    finally:
        # pyspark installs its own Ctrl-C handler; the caller's stays in charge (this
        # engine cancels Spark's jobs when a statement is interrupted)
        if main and previous is not None:
            signal.signal(signal.SIGINT, previous)
    # Spark's log at ERROR can quote a value (a task that failed on it); sbc-sql says
    # what went wrong itself
    session.sparkContext.setLogLevel("FATAL")
    return session, True
