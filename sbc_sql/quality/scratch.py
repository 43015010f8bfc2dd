"""The temporary tables of one evaluation (``sbc_eval_<hex>_*``): their names, the statement
that drops one, and the block that drops them all when it ends."""

from __future__ import annotations

import secrets
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

from sqlglot import exp

from ..engines.base import Engine
from ..sql.templates import ident


@dataclass(frozen=True)
class Names:
    """The run's temporary tables: the input's statistics, the release's classes, the input's
    distinct rows, their coverage (:mod:`sbc_sql.quality.linkage`) and the queries' bounds,
    registered from Arrow (:mod:`sbc_sql.quality.queries`)."""

    src: str
    classes: str
    tuples: str
    cov: str
    queries: str

    @classmethod
    def fresh(cls) -> Names:
        stem = f"sbc_eval_{secrets.token_hex(4)}"
        return cls(f"{stem}_src", f"{stem}_classes", f"{stem}_tuples", f"{stem}_cov", f"{stem}_queries")

    def created(self) -> tuple[str, ...]:
        """The tables the statements create, in the order they are dropped (the last made
        first); the queries' table is registered, and goes with its registration."""
        return (self.cov, self.tuples, self.classes, self.src)


def drop(name: str) -> exp.Expression:
    return exp.Drop(tables=[exp.Table(this=ident(name))], kind="TABLE", exists=True)


@contextmanager
def dropped(engine: Engine, names: Names) -> Iterator[None]:
    """Drops the tables the block created when it ends, however it ends."""
    try:
        yield
    finally:
        for name in names.created():
            engine.execute(drop(name))
