"""What a run gives back: the release, queryable through the run's engine, with its
measures, its verdict and the run's seconds."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pyarrow as pa
from sqlglot import exp

from .. import plan as planning
from ..engines.base import Engine
from ..errors import InputError
from ..privacy.criteria import Criteria
from ..sql.templates import ident
from ..stages import measure, verify


@dataclass(repr=False)
class Result:
    """What an anonymize run produced; the release stays queryable through ``engine``.

    ``measures`` holds the figures (NCP per QI and total, classes, suppressed rows),
    ``to_pandas()`` / ``to_arrow()`` / ``relation()`` read the release view, ``statements``
    lists the run's SQL. A Result is a context manager: leaving the ``with`` block (or
    ``close()``) closes the database connection if sbc-sql opened it, which releases the
    database file for other processes; a connection you passed in stays open.
    """

    engine: Engine
    release: str
    view: str
    plan: planning.Plan
    measures: measure.Measures | None
    verdict: verify.Verdict | None
    mode: str = ""
    timings: dict[str, float] = field(default_factory=dict)
    written: bool = True
    #: the file the release was exported to (--out-file), once written
    exported: Path | None = None
    #: the criteria asked on top of k and, per figure (l_diversity, t_closeness, ...), what
    #: the release achieves on its sensitive columns (the worst over columns and classes)
    criteria: Criteria | None = None
    achieved: dict[str, float] = field(default_factory=dict)
    #: suppressed rows per reason (rare_value, unplaced, ...), when the algorithm gave reasons
    suppressed_by: dict[str, int] = field(default_factory=dict)
    #: the distinct QI tuples clustered, each standing for its rows (None: every row was)
    tuples: int | None = None
    #: a dry run's: the values of the bound parameters (``$k`` ...) its statements leave as
    #: parameters, by name, and the working table its statements read each row's class from
    #: (made in memory by the clustering, which a dry run does not run)
    bound: dict[str, Any] = field(default_factory=dict)
    labels: str | None = None
    #: closed, with the connection sbc-sql opened for it
    closed: bool = field(default=False, init=False)
    #: the engine is the caller's own (an Engine passed to anonymize): close() leaves it open
    borrowed: bool = field(default=False, init=False)

    @property
    def statements(self) -> list[str]:
        """Every statement of the run, in order, as SQL text."""
        return self.engine.statements()

    @property
    def con(self) -> Any:
        """The DuckDB connection the release was written through."""
        if self.closed:
            raise InputError(
                f"the result of '{self.release}' is closed (result.close(), or the end of its with "
                "block), and with it the database sbc-sql opened; read the release before closing "
                "(released = result.to_pandas() inside the with block), or give anonymize a "
                "database file to read it from later"
            )
        connection = getattr(self.engine, "connection", None)
        if connection is None:
            raise InputError(
                f"the release '{self.release}' was written by the {self.engine.name} engine, which "
                "keeps no DuckDB connection; read it where it was written (Spark: "
                "spark.read.parquet, or the catalog table)"
            )
        return connection

    def relation(self) -> Any:
        return self.con.table(self.engine.sql(exp.Table(this=ident(self.release))))

    def to_pandas(self) -> Any:
        return self.relation().df()

    def to_arrow(self) -> pa.Table:
        return self.relation().to_arrow_table()

    def close(self) -> None:
        """Close the connection if sbc-sql opened it (idempotent)."""
        if self.borrowed:
            return
        self.engine.close()
        # a connection the caller passed in stays open, and the release readable
        if getattr(self.engine, "owned", False):
            self.closed = True

    def __enter__(self) -> Result:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        m = self.measures
        if m is None:
            return f"<Result '{self.release}': k={self.plan.k}, not written (SQL only)>"
        return (
            f"<Result '{self.release}': k={self.plan.k}, {m.n_rows:,} rows -> {m.released:,} "
            f"in {m.classes:,} classes (smallest {m.smallest:,}), total NCP {m.total_ncp:.4f}>"
        )
