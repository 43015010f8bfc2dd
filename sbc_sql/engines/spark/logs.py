"""The logs pyspark and py4j write while the Spark engine runs a call, silenced: a failed
query's message can quote a value, and a call Ctrl-C interrupted prints a stack before
sbc-sql's own line."""

from __future__ import annotations

import contextlib
import logging
import os
from collections.abc import Iterator

#: pyspark's Python loggers that print a failed query's message (which can quote a value)
_QUERY_LOGGERS = ("SQLQueryContextLogger", "DataFrameQueryContextLogger")


class _FromPy4j(logging.Filter):
    """Drops the records py4j logs on the root logger (a call Ctrl-C interrupted)."""

    def filter(self, record: logging.LogRecord) -> bool:
        return f"{os.sep}py4j{os.sep}" not in record.pathname


@contextlib.contextmanager
def quiet() -> Iterator[None]:
    """pyspark's log of a failed query (its message, which can quote a value) and py4j's of
    a call Ctrl-C interrupted (a stack on stderr before sbc-sql's own line) are not shown
    while the engine runs a call; logging is left as it was afterwards."""
    from pyspark.logger import PySparkLogger

    # pyspark's own logger class (a plain logger of that name would fail its calls)
    loggers = [PySparkLogger.getLogger(n) for n in _QUERY_LOGGERS] + [logging.getLogger("py4j")]
    before = [lg.disabled for lg in loggers]
    root = logging.getLogger()
    dropping = _FromPy4j()
    # py4j logs through logging.exception(), which configures a root handler when there is
    # none; one that does nothing stands in meanwhile
    standin = logging.NullHandler() if not root.handlers else None
    for lg in loggers:
        lg.disabled = True
    root.addFilter(dropping)
    if standin is not None:
        root.addHandler(standin)
    try:
        yield
    finally:
        root.removeFilter(dropping)
        if standin is not None:
            root.removeHandler(standin)
        for lg, was in zip(loggers, before, strict=True):
            lg.disabled = was
