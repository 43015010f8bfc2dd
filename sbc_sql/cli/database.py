"""Where a command reads and writes: --db, or with --engine spark a Spark session built from
--spark-master and --spark-conf; the engine flags checked to fit together."""

import contextlib
from collections.abc import Iterator
from typing import Any

import typer

from ..errors import SbcError
from .app import loading, reported


def _spark_conf(values: list[str] | None) -> dict[str, str]:
    """--spark-conf key=value (repeatable) as a mapping."""
    conf: dict[str, str] = {}
    for value in values or ():
        key, sep, setting = value.partition("=")
        if not sep or not key.strip():
            raise typer.BadParameter(
                f"'{value}' is not key=value; write e.g. --spark-conf spark.driver.memory=4g",
                param_hint="--spark-conf",
            )
        conf[key.strip()] = setting.strip()
    return conf


def check_engine(engine: str, db: str | None, master: str | None, conf: list[str] | None) -> dict[str, str]:
    """The engine options fit together (a usage error otherwise); the Spark properties."""
    with reported(), loading():  # the engines load here: Ctrl-C meanwhile is one line too
        from .. import engines

    if engines.builds_session(engine):
        if db is not None:
            raise typer.BadParameter(
                "--db names a DuckDB file or a PostgreSQL URL; with --engine spark tables are "
                "Parquet/CSV paths or tables of the Spark catalog: drop --db",
                param_hint="--db",
            )
        return _spark_conf(conf)
    if master is not None or conf:
        raise typer.BadParameter(
            "--spark-master and --spark-conf configure Apache Spark: add --engine spark, or drop them",
            param_hint="--engine",
        )
    return {}


@contextlib.contextmanager
def connected(
    engine: str, db: str | None, master: str | None, conf: dict[str, str], *, needs_db: bool = True
) -> Iterator[Any]:
    """What the command reads and writes: --db, or with --engine spark a Spark engine (a
    session built here, stopped on the way out). Inside :func:`.app.reported`."""
    from .. import engines

    if not engines.builds_session(engine):
        if db is None and needs_db:
            raise SbcError("no --db given; pass the DuckDB file (or a postgresql:// URL) with --db")
        yield db
        return
    spark = engines.connect(None, engine=engine, master=master, conf=conf)
    try:
        yield spark
    finally:
        spark.close()
