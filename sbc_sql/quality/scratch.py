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
    """The run's temporary tables: the input's statistics, the release's classes (read by the
    query error too, :mod:`sbc_sql.quality.queries`), the input's distinct rows, their
    coverage and the classes under the coverage join's keys (:mod:`sbc_sql.quality.linkage`)."""

    src: str
    classes: str
    tuples: str
    cov: str
    keys: str

    @classmethod
    def fresh(cls) -> Names:
        stem = f"sbc_eval_{secrets.token_hex(4)}"
        return cls(
            f"{stem}_src",
            f"{stem}_classes",
            f"{stem}_tuples",
            f"{stem}_cov",
            f"{stem}_keys",
        )

    def created(self) -> tuple[str, ...]:
        """The tables the statements create, in the order they are dropped (the last made
        first)."""
        return (self.cov, self.keys, self.tuples, self.classes, self.src)


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
