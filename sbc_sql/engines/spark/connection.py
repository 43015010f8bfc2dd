"""The Spark engine's connection: its session, every Spark call inside the boundary (errors
read by their error class, pyspark's and py4j's logs silenced, the engine's Spark jobs in a job
group of their own, cancelled on Ctrl-C or SIGTERM), and a statement's rows."""

from __future__ import annotations

import contextlib
import secrets
import signal
import threading
from collections.abc import Iterator
from typing import Any

import pyarrow as pa
from sqlglot import exp

from ...errors import SIGNALLED, EngineError, InputError
from ..base import Engine, Params
from . import messages
from .ddl import parsed
from .logs import quiet

#: the local property that holds a thread's job group (SparkContext.setJobGroup's)
JOB_GROUP = "spark.jobGroup.id"


def quoted(name: str) -> str:
    """A name as one Spark identifier."""
    return "`" + name.replace("`", "``") + "`"


class SparkConnection(Engine):
    """The Spark engine's session (``owned``: built by sbc-sql, stopped on close) and its
    calls."""

    def __init__(self, session: Any, *, owned: bool = False) -> None:
        super().__init__()
        if not hasattr(session, "sparkContext") or getattr(session, "_jsc", None) is None:
            raise InputError(
                "the Spark session is a Spark Connect session, which sbc-sql cannot use yet; "
                "give a classic SparkSession (SparkSession.builder ... .getOrCreate())"
            )
        self.session = session
        self.owned = owned
        self._closed = False
        #: the job group of every Spark job the engine's calls start: an interruption cancels
        #: it, the jobs it runs and any it would start yet (a call Ctrl-C interrupted may
        #: still be planning its job), never the jobs another user of the session runs
        self.job_group = f"sbc-sql-{secrets.token_hex(4)}"
        #: a call was interrupted: what fails after it (a cancelled job, the driver's JVM
        #: gone) is the interruption, not an error
        self._interrupted = False

    def translate(self, err: Exception, doing: str) -> BaseException | None:
        try:
            from py4j.protocol import Py4JError
            from pyspark.errors import PySparkException
        except ImportError:  # pragma: no cover - the engine needs pyspark
            return None
        if not isinstance(err, (PySparkException, Py4JError)):
            return None
        if self._interrupted or SIGNALLED.is_set():
            # what fails once a call was interrupted (a cancelled job, a context or a JVM
            # that a signal to the process group stopped) fails because of it, even when it
            # fails before the main thread runs the signal's handler
            return KeyboardInterrupt()
        if isinstance(err, Py4JError) and not hasattr(err, "java_exception"):
            return EngineError(f"{doing}: the Spark driver stopped answering (its JVM ended)", "other")
        return messages.explain(messages.read(err), doing)

    @contextlib.contextmanager
    def _driver(self, doing: str | Any) -> Iterator[None]:
        """Spark calls inside: their errors translated, the logs of pyspark and py4j
        silenced (see :func:`.logs.quiet`), the jobs they start in :attr:`job_group`, and
        that group cancelled when Ctrl-C (or SIGTERM, which the command raises as Ctrl-C)
        stops a call."""
        outer = not self._in_driver
        with quiet(), self._marking_ctrl_c(outer):
            try:
                with self.driver_call(doing):
                    if outer:
                        # a job group is the JVM thread's, and a call Ctrl-C interrupted
                        # leaves its connection (and its JVM thread) behind: set each time
                        self.session.sparkContext.setLocalProperty(JOB_GROUP, self.job_group)
                    yield
            except KeyboardInterrupt:
                self._interrupted = True
                if outer:
                    self._cancel()
                raise

    @contextlib.contextmanager
    def _marking_ctrl_c(self, outer: bool) -> Iterator[None]:
        """Ctrl-C during the call marks it interrupted before the handler in place runs.
        PySpark's own handler (a session's SparkContext installs it) cancels every job
        through the driver from inside the call it interrupts, and that nested call can
        break the one under way: the call then fails with a py4j error, which is the
        interrupt, not a driver that stopped answering (seen in two runs, under load, of the
        test of a Ctrl-C during a long statement)."""
        if not outer or threading.current_thread() is not threading.main_thread():
            yield
            return
        before = signal.getsignal(signal.SIGINT)
        if not callable(before):  # ignored, or the default action: left as it is
            yield
            return

        def mark(signum: int, frame: Any) -> None:
            self._interrupted = True
            before(signum, frame)

        signal.signal(signal.SIGINT, mark)
        try:
            yield
        finally:
            signal.signal(signal.SIGINT, before)

    def _cancel(self) -> None:
        """Cancel the engine's job group, the jobs it runs and those it would start, and
        wait (a little) for them to end, so that nothing writes or computes after the run
        has stopped; the engine's later calls run in a new group."""
        group, self.job_group = self.job_group, f"sbc-sql-{secrets.token_hex(4)}"
        with contextlib.suppress(Exception):
            context = self.session.sparkContext
            context._jsc.sc().cancelJobGroupAndFutureJobs(group)
            tracker = context.statusTracker()
            for _ in range(100):
                if not set(tracker.getJobIdsForGroup(group)) & set(tracker.getActiveJobsIds()):
                    break
                threading.Event().wait(0.1)

    def _run(self, sql: str, params: Params = None) -> Any:
        """The DataFrame of a statement (run at once for a command, lazy for a query)."""
        return self.session.sql(sql, args=dict(params) if params else None)

    def _fetch(self, sql: str, params: Params) -> list[tuple[Any, ...]]:
        with self._driver(lambda: self.operation(sql)):
            return [tuple(row) for row in self._run(sql, params).collect()]

    def _arrow(self, sql: str) -> pa.Table:
        with self._driver(lambda: self.operation(sql)):
            return self._run(sql).toArrow()

    def _stream(self, sql: str, batch_rows: int, params: Params = None) -> Iterator[pa.RecordBatch]:
        # the rows are collected on the driver, where the clustering runs
        with self._driver(lambda: self.operation(sql)):
            table = self._run(sql, params).toArrow()
        yield from table.to_batches(max_chunksize=batch_rows)

    def operation(self, sql: str) -> str:
        tree = parsed(sql)
        if isinstance(tree, exp.Cache):
            return f"creating table '{tree.this.name}'"
        return super().operation(sql)
