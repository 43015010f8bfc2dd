"""Kept columns that determine a quasi-identifier: a column released as it is (``--keep``, the
comment 'sbc:insensitive', or ``--target``) whose value gives a QI's value would publish that
QI as it is, whatever its class's range or set says (a code column beside the label it
codes: Adult's education-num beside education).

The rule, over the source's n rows: kept column K *determines* QI Q when

* at least :data:`DETERMINED_SHARE` (99 %) of the rows sit in groups of K (the rows that
  share one value of K, NULL one of them) that hold a single value of Q (NULL one of them);
* K has at most :data:`~.roles.IDENTIFIER_SHARE` (half) as many distinct values as rows
  (NULL counted): a column distinct on more rows than that looks like a direct identifier,
  and the identifier checks speak of it (a kept one is released with a warning), not this
  one; a column unique on every row, such as a visit id, determines every column but tells
  no QI's value to anyone who does not hold the source;
* Q holds more than one value (a QI of one value is released as that value anyway).

A column that determines a combination of QIs determines each of them, so checking each QI
covers every combination: the message names all the QIs a column determines.

The figures come from one SQL statement over the source (sql/templates/kept_determinants.sql,
:func:`sbc_sql.stages.stats.kept_determinants`); this module decides from them. Messages name
columns and shares, never a value.
"""

from __future__ import annotations

import shlex
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass

from ..errors import InputError, RoleError
from ..model import Column
from .roles import IDENTIFIER_SHARE

#: K determines Q when at least this share of the rows sit in K-groups of one Q value
DETERMINED_SHARE = 0.99

#: the option that lets a kept column determine a QI
FLAG = "--allow-determinant"


@dataclass(frozen=True)
class Determination:
    """What the source shows of its kept columns against its QIs (one statement's figures).

    ``values``: per kept column, its distinct values (NULL one of them); ``determined``: per
    (kept column, QI), the rows that sit in a group of the kept column holding one value of
    the QI; ``constant``: the QIs that hold one value over the whole table."""

    n_rows: int
    values: Mapping[str, int]
    determined: Mapping[tuple[str, str], int]
    constant: frozenset[str]


@dataclass(frozen=True)
class Determinant:
    """A kept column and the QIs it determines, each with the share of rows it gives."""

    column: str
    qis: tuple[str, ...]
    shares: tuple[float, ...]

    def described(self) -> str:
        """ "quasi-identifier 'education' (its value gives that QI's on 100% of the rows)":
        names and shares, never a value."""
        shares = " and ".join(share_text(s) for s in self.shares)
        if len(self.qis) == 1:
            return f"quasi-identifier {self.named} (its value gives that QI's on {shares} of the rows)"
        return f"quasi-identifiers {self.named} (its value gives theirs on {shares} of the rows)"

    @property
    def named(self) -> str:
        """The QIs' quoted names: "'a'", "'a' and 'b'", "'a', 'b' and 'c'"."""
        names = [f"'{q}'" for q in self.qis]
        return names[0] if len(names) == 1 else ", ".join(names[:-1]) + " and " + names[-1]


def quoted(name: str) -> str:
    """A column's name as a flag's value, always quoted ('zip'), so that a Python caller
    reads it as a keyword's value (qi='zip') and a shell as one word."""
    q = shlex.quote(name)
    return q if q != name else f"'{name}'"


def share_text(share: float) -> str:
    """A share as a percentage that never rounds up to 100% unless it is all the rows."""
    if share >= 1.0:
        return "100%"
    return f"{min(share, 0.999):.1%}"


def may_determine(values: int, n_rows: int) -> bool:
    """Whether a kept column of ``values`` distinct values (NULL one of them) in ``n_rows``
    rows is one the rule weighs: at most :data:`~.roles.IDENTIFIER_SHARE` of the rows (a
    column above it looks like an identifier; the scan leaves it out, its groups the most
    costly to count)."""
    return values <= IDENTIFIER_SHARE * n_rows


def determinants(found: Determination, kept: Iterable[str], qis: Sequence[str]) -> list[Determinant]:
    """Each kept column that determines at least one QI (the rule: the module docstring),
    in the order ``kept`` names them."""
    n = found.n_rows
    out: list[Determinant] = []
    if n <= 0:
        return out
    for k in kept:
        values = found.values.get(k)
        if values is None or not may_determine(values, n):
            continue
        hit = [
            (q, found.determined[(k, q)] / n)
            for q in qis
            if q not in found.constant
            and (k, q) in found.determined
            and found.determined[(k, q)] >= DETERMINED_SHARE * n
        ]
        if hit:
            out.append(Determinant(k, tuple(q for q, _ in hit), tuple(s for _, s in hit)))
    return out


#: how a kept column came to be released as it is, as the message says it
_KEPT_BY = {"flag": "--keep", "comment": "its comment 'sbc:insensitive'", "target": "--target"}


def kept_columns(columns: Sequence[Column]) -> list[Column]:
    """The columns released as they are that are not sensitive and can be grouped by: kept
    (``--keep``, 'sbc:insensitive', ``--target``), of a kind (a nested or binary column has
    no equality every engine groups by)."""
    return [c for c in columns if c.role == "insensitive" and c.kind is not None]


def check_allowed(columns: Sequence[Column], allowed: Sequence[str], table: str) -> None:
    """Each column ``--allow-determinant`` names is a column of the table released as it is
    and not sensitive (the only ones the check refuses)."""
    by_name = {c.name: c for c in columns}
    for name in allowed:
        c = by_name.get(name)
        if c is None:
            raise InputError(
                f"column '{name}' given to {FLAG} does not exist in '{table}'; its columns are: "
                f"{', '.join(by_name)}"
            )
        if c.role != "insensitive":
            raise InputError(
                f"{FLAG} names '{name}', which is {_role_text(c.role)}, not released as it is by --keep; "
                f"{FLAG} lets a kept column determine a quasi-identifier: drop it from {FLAG}"
            )


def _role_text(role: str) -> str:
    return {
        "qi": "a quasi-identifier",
        "sensitive": "sensitive",
        "identifier": "an identifier (--drop)",
    }.get(role, role)


def refusal(d: Determinant, origin: str, more: Sequence[Determinant] = ()) -> str:
    """The one line that refuses a run whose kept column ``d.column`` determines QIs
    (``origin``: where its role comes from, 'flag', 'comment' or 'target'); ``more``: the
    other kept columns that do, named after it."""
    k = quoted(d.column)
    by = _KEPT_BY.get(origin, "--keep")
    if origin == "target":
        fix = f"choose another --target, or pass {FLAG} {k} if releasing it as it is is meant"
    else:
        fix = (
            f"declare it a quasi-identifier with --qi {k} (instead of {by}), leave it out with "
            f"--drop {k}, or pass {FLAG} {k} if releasing it as it is is meant"
        )
    named = ", ".join(f"'{m.column}'" for m in more)
    others = f" ({len(more)} more kept column(s) determine a quasi-identifier: {named})" if more else ""
    return (
        f"column '{d.column}' is released as it is ({by}) and determines {d.described()}, so the "
        f"release would publish {d.named} as it is, whatever its classes' ranges and sets say; "
        f"{fix}{others}"
    )


def check_determinants(
    columns: Sequence[Column],
    found: Determination,
    allowed: Iterable[str],
    log: Callable[[str], None],
) -> None:
    """Refuse a run whose kept column determines a QI (one line naming the first such column,
    the QIs and the fix); one allowed by ``--allow-determinant`` is released with a warning."""
    kept = kept_columns(columns)
    qis = [c.name for c in columns if c.role == "qi"]
    origin = {c.name: c.origin for c in kept}
    permitted = set(allowed)
    found_here = determinants(found, [c.name for c in kept], qis)
    refused = [d for d in found_here if d.column not in permitted]
    for d in found_here:
        if d.column in permitted:
            log(
                f"warning: column '{d.column}' is released as it is and determines {d.described()}; "
                f"{FLAG} {d.column} lets it: the release publishes {d.named} as it is"
            )
    if refused:
        first = refused[0]
        raise RoleError(refusal(first, origin[first.column], refused[1:]))
