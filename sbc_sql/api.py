"""measure() and verify() for any original + release pair in a database."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from . import db
from .db import Connection
from .errors import InputError
from .stages import measure as metrics
from .stages.verify import Verdict, verify_pair


def _tables(con: Connection, original: str, release: str) -> None:
    for name, flag in ((original, "--original"), (release, "--release")):
        if not db.table_exists(con, name):
            raise InputError(
                f"table or view '{name}' does not exist in the database; pass an existing one with {flag}"
            )


def _layout(
    con: Connection, original: str, release: str, weights: Mapping[str, float] | None
) -> metrics.Layout:
    layout = metrics.infer_layout(con, original, release, weights)
    if not layout.qis:
        raise InputError(
            f"'{release}' has no generalized column of '{original}' (no c_min/c_max "
            "or value list); pass the release made from that original"
        )
    return layout


def measure(
    database: str | Path | Connection,
    original: str,
    release: str,
    *,
    weights: Mapping[str, float] | None = None,
    ranges: Mapping[str, tuple[float, float]] | None = None,
) -> metrics.Measures:
    """NCP per QI and total, utility and class sizes of ``release`` against ``original``.

    ``ranges`` overrides a numeric QI's domain (e.g. ``{"age": (10, 100)}``) when the
    denominator of its NCP should be a declared domain rather than the data's range.
    """
    con = db.connect(database)
    _tables(con, original, release)
    return metrics.measure_tables(con, _layout(con, original, release, weights), original, release, ranges)


def verify(database: str | Path | Connection, original: str, release: str, k: int) -> Verdict:
    """k-anonymity and completeness of ``release`` against ``original``."""
    if k < 2:
        raise InputError(f"k={k} is below 2; choose --k 2 or more")
    con = db.connect(database)
    _tables(con, original, release)
    return verify_pair(con, _layout(con, original, release, None), original, release, k)
