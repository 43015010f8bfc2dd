"""The SparkSession the Spark engine runs in when the caller gives none: the one running in
this process already, or one built here (``local[*]`` by default; spark-submit's master and
settings under spark-submit) with sbc-sql's settings.

A session built here starts quietly: its driver JVM reads the log4j 2 configuration beside
this module (errors only, and none of Spark's start-up notices), and the JVM's own notice
of its incubator modules, which no log configuration reaches, is left out of the stderr the
JVM inherits (:func:`_without_jvm_notices`). A command's stderr then holds sbc-sql's lines
alone.

The driver JVM a session built here launches is sbc-sql's to stop: it ignores SIGINT (pyspark
starts it so) and SIGTERM (:func:`_ignore_sigterm`). A signal sent to the whole process group
(Ctrl-C in a terminal; a service manager's or ``kill -TERM -<pgid>``'s SIGTERM) then stops the
command through its own handler, which cancels the run's Spark jobs and drops its temporary
views in a session still running before it stops the session; the JVM ends when the session
stops, or when this process ends, whose pipe to it then closes."""

from __future__ import annotations

import contextlib
import os
import re
import signal
import sys
import threading
from collections.abc import Iterator, Mapping
from pathlib import Path
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


#: the log4j 2 configuration the driver JVM of a session built here reads
LOG4J = Path(__file__).with_name("log4j2.properties")
#: the notice the JVM itself writes on stderr as it starts (Spark runs it with
#: --add-modules=jdk.incubator.vector), which no log level silences
_JVM_NOTICES = (b"WARNING: Using incubator modules: ",)


def _java_options(given: str | None) -> str:
    """The driver JVM's options: the log4j configuration, then those given (which win)."""
    ours = f"-Dlog4j2.configurationFile={LOG4J.resolve().as_uri()}"
    return f"{ours} {given}" if given else ours


@contextlib.contextmanager
def _without_jvm_notices() -> Iterator[None]:
    """While a session starts, this process's stderr (file descriptor 2) is a pipe, which the
    JVM inherits and keeps for its life; a thread copies what comes through it to the
    stderr this process has again once the session runs, but for the JVM's notices
    (:data:`_JVM_NOTICES`). Where the descriptor cannot be duplicated, nothing changes."""
    try:
        sys.stderr.flush()
        saved = os.dup(2)
    except (OSError, ValueError):
        yield
        return
    read, write = os.pipe()
    os.dup2(write, 2)
    os.close(write)
    threading.Thread(target=_copy_stderr, args=(read,), name="sbc-sql JVM stderr", daemon=True).start()
    try:
        yield
    finally:
        with contextlib.suppress(OSError, ValueError):
            sys.stderr.flush()
        os.dup2(saved, 2)
        os.close(saved)


def _copy_stderr(read: int) -> None:
    """Copy the pipe's lines to file descriptor 2 but the JVM's notices, until the JVM (the
    last writer) ends or stderr is gone."""
    with contextlib.suppress(OSError), os.fdopen(read, "rb") as pipe:
        for line in pipe:
            if line.startswith(_JVM_NOTICES):
                continue
            while line:
                line = line[os.write(2, line) :]


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
    if not submitted:
        # the JVM starts here: quietly (see the module's docstring)
        key = "spark.driver.extraJavaOptions"
        settings[key] = _java_options(settings.get(key))
    builder = SparkSession.builder.appName("sbc-sql")
    if chosen:
        builder = builder.master(chosen)
    for key, value in settings.items():
        builder = builder.config(key, value)
    from pyspark import SparkContext

    # the JVM is launched here unless one runs already (a session stopped earlier in this
    # process), or spark-submit runs it
    launched = SparkContext._gateway is None and not submitted
    main = threading.current_thread() is threading.main_thread()
    previous = signal.getsignal(signal.SIGINT) if main else None
    try:
        with contextlib.nullcontext() if submitted else _without_jvm_notices():
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
    if launched:
        _ignore_sigterm(session)
    # Spark's log at ERROR can quote a value (a task that failed on it); sbc-sql says
    # what went wrong itself
    session.sparkContext.setLogLevel("FATAL")
    return session, True


def _ignore_sigterm(session: Any) -> None:
    """The driver JVM ignores SIGTERM, as it ignores SIGINT: a SIGTERM sent to the process
    group would otherwise end it at once (its shutdown hooks stop the SparkContext), while
    this process, which gets the same signal, still cancels the run's jobs and drops its
    views through it; the run's stop was then a lost driver's error. The JVM still ends with
    the session, or with this process (it exits when its standard input, a pipe from this
    process, closes). Where the JVM does not let it (a JVM that reduces its signal use,
    -Xrs), it is left as it is."""
    with contextlib.suppress(Exception):
        jvm = session.sparkContext._jvm
        jvm.sun.misc.Signal.handle(jvm.sun.misc.Signal("TERM"), jvm.sun.misc.SignalHandler.SIG_IGN)
