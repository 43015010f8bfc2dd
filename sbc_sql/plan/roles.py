"""Column roles: flags win over comments (``sbc:qi`` ...); with no QI named anywhere an undeclared
column is a QI; with QIs named an undeclared column is an error naming the flags that declare
it. Direct identifiers are recognized by their names and refused unless declared.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Iterable, Mapping

from ..errors import InputError, RoleError
from ..model import ROLES, TableInfo
from .decided import Plan
from .options import Options

FLAG_OF_ROLE = {"qi": "--qi", "sensitive": "--sensitive", "identifier": "--drop", "insensitive": "--keep"}


COMMENT_PREFIX = "sbc:"


def comment_role(comment: str | None) -> str | None:
    """The role a column comment declares ('sbc:qi' ...), or None for any other comment."""
    role = comment_word(comment)
    return role if role in ROLES else None


def comment_word(comment: str | None) -> str | None:
    """What follows 'sbc:' in a comment, lower-cased (None: not a role comment)."""
    if not comment:
        return None
    text = comment.strip().lower()
    if not text.startswith(COMMENT_PREFIX):
        return None
    return text[len(COMMENT_PREFIX) :].strip()


#: a word of an undeclared column's name that says it holds a direct identifier
IDENTIFIER_WORDS = frozenset(
    {
        "name",
        "firstname",
        "lastname",
        "surname",
        "fullname",
        "username",
        "email",
        "mail",
        "phone",
        "telephone",
        "mobile",
        "fax",
        "ssn",
        "passport",
        "address",
        "street",
        "ip",
        "ipv4",
        "ipv6",
        "iban",
        "login",
    }
)


#: an undeclared categorical column with more distinct values than this share of the rows
#: looks like a direct identifier (numbers and dates are exempt: a birth date is a QI)
IDENTIFIER_SHARE = 0.5


#: below this many rows a share says little; only a column distinct on every row is refused
IDENTIFIER_MIN_ROWS = 20


def name_words(name: str) -> list[str]:
    """'PatientEmail', 'patient_e-mail' -> ['patient', 'email']: a name's words, lower-cased."""
    spaced = re.sub(r"([A-Z]+)([A-Z][a-z])", r"\1 \2", re.sub(r"([a-z0-9])([A-Z])", r"\1 \2", name))
    return [w.replace("-", "").lower() for w in re.split(r"[^A-Za-z0-9-]+", spaced) if w]


def declared_roles(
    info: TableInfo,
    name: str,
    qi: Iterable[str] = (),
    sensitive: Iterable[str] = (),
    drop: Iterable[str] = (),
    keep: Iterable[str] = (),
) -> dict[str, tuple[str, str]]:
    """The (role, origin) of every column whose role is declared: by a flag ('flag'), else by
    its comment ('comment'). A flag naming no column, a column given two roles or a comment
    'sbc:...' that is no role is an error naming it; undeclared columns are left out."""
    known = [c.name for c in info.columns]
    flagged: dict[str, str] = {}
    for role, names in (("qi", qi), ("sensitive", sensitive), ("identifier", drop), ("insensitive", keep)):
        for col in names:
            if col not in known:
                raise InputError(
                    f"column '{col}' given to {FLAG_OF_ROLE[role]} does not exist in "
                    f"'{name}'; its columns are: {', '.join(known)}"
                )
            if col in flagged and flagged[col] != role:
                raise RoleError(
                    f"column '{col}' is given two roles ({FLAG_OF_ROLE[flagged[col]]} "
                    f"and {FLAG_OF_ROLE[role]}); give it one"
                )
            flagged[col] = role
    roles: dict[str, tuple[str, str]] = {}
    for c in info.columns:
        if c.name in flagged:
            roles[c.name] = (flagged[c.name], "flag")
        elif (commented := comment_role(c.comment)) is not None:
            roles[c.name] = (commented, "comment")
        elif (typo := comment_word(c.comment)) is not None:
            raise RoleError(
                f"column '{c.name}' of '{name}' has the comment 'sbc:{typo}', which is no role; "
                f"write one of {', '.join(COMMENT_PREFIX + r for r in ROLES)} (COMMENT ON COLUMN), "
                f"or give the column a role with {', '.join(FLAG_OF_ROLE.values())}"
            )
    return roles


AS_ROLE = {"qi": "a quasi-identifier", "sensitive": "released as sensitive", "insensitive": "kept"}


def resolve_roles(info: TableInfo, options: Options, name: str) -> dict[str, tuple[str, str]]:
    known = [c.name for c in info.columns]
    roles = declared_roles(info, name, options.qi, options.sensitive, options.drop, options.keep)
    target_role(roles, known, options, name)
    qi_named = any(role == "qi" for role, _ in roles.values())
    undeclared = [c for c in known if c not in roles]
    if qi_named and undeclared:
        raise RoleError(
            f"column '{undeclared[0]}' has no role while quasi-identifiers are named; "
            f"declare it with --qi, --sensitive, --keep or --drop "
            f"({len(undeclared)} undeclared column(s): {', '.join(undeclared)})"
        )
    for col in undeclared:
        roles[col] = ("qi", "default")
    return roles


def target_role(roles: dict[str, tuple[str, str]], known: list[str], options: Options, name: str) -> None:
    """The --target column is released verbatim: insensitive unless declared sensitive or
    insensitive (never a QI, never dropped); its weight is a number of 0 or more."""
    target = options.target
    w = options.target_weight
    if w is not None and (
        isinstance(w, bool) or not isinstance(w, (int, float)) or not math.isfinite(w) or w < 0
    ):
        raise InputError(
            f"--target-weight {w} is not a number of 0 or more; it says how many points of total NCP "
            "one point of label impurity is worth: give e.g. --target-weight 0.1"
        )
    if target is None:
        if w is not None:
            raise InputError("--target-weight weighs the labels of --target; give --target COLUMN too")
        return
    if target not in known:
        raise InputError(
            f"--target names '{target}', which is not a column of '{name}'; "
            f"its columns are: {', '.join(known)}"
        )
    role = roles.get(target, (None, ""))[0]
    if role == "qi":
        raise InputError(
            f"--target names '{target}', a quasi-identifier; the target label is released as it is, "
            f"so it cannot be generalized: drop it from --qi (or declare it --keep or --sensitive)"
        )
    if role == "identifier":
        raise InputError(
            f"--target names '{target}', which is declared an identifier and never released; "
            "declare it --keep or --sensitive"
        )
    if role is None:
        roles[target] = ("insensitive", "target")


def identifier_word(name: str) -> str | None:
    """The word of a column's name that says it holds a direct identifier (name, email,
    phone, ssn, address, ip...), or None."""
    words = sorted(IDENTIFIER_WORDS.intersection(name_words(name)))
    return words[0] if words else None


def check_identifier_names(roles: Mapping[str, tuple[str, str]]) -> None:
    """An undeclared column named like a direct identifier is never a default QI."""
    for column, (_, origin) in roles.items():
        word = identifier_word(column)
        if origin == "default" and word:
            raise RoleError(
                f"column '{column}' has no declared role and is named like a direct identifier "
                f"('{word}'); declare it with --drop (or --qi / --keep / --sensitive if it is not one)"
            )


def identifier_evidence(kind: str | None, n_rows: int, distinct: int | None) -> str | None:
    """Why the data shows a column to be a direct identifier, or None: distinct on every row
    (``distinct``: its distinct non-NULL values), or categorical and distinct on more than
    half the rows (from 20 rows on)."""
    share = distinct / n_rows if distinct is not None and n_rows else 0.0
    if n_rows >= 2 and distinct == n_rows:
        return f"is distinct on all {n_rows:,} rows and looks like a direct identifier"
    if kind == "categorical" and n_rows >= IDENTIFIER_MIN_ROWS and share > IDENTIFIER_SHARE:
        return (
            f"has {distinct:,} distinct values in {n_rows:,} rows ({share:.0%}, above "
            f"{IDENTIFIER_SHARE:.0%}) and looks like a direct identifier"
        )
    return None


def check_identifiers(
    plan: Plan, n_rows: int, distinct: Mapping[str, int], log: Callable[[str], None]
) -> None:
    """An undeclared column that the data shows to be a direct identifier is refused as a
    default QI (:func:`identifier_evidence`; one named like an identifier is refused by the
    plan already). A column kept verbatim (--keep) that is that distinct is released as it
    is, with a warning."""
    for c in plan.columns:
        seen = distinct.get(c.name)
        share = seen / n_rows if seen is not None and n_rows else 0.0
        if c.origin == "default":
            why = identifier_evidence(c.kind, n_rows, seen)
            if why:
                raise RoleError(
                    f"column '{c.name}' has no declared role and {why}; declare it with --drop "
                    "(or --qi / --keep / --sensitive if it is not one)"
                )
        elif c.role == "insensitive" and n_rows >= IDENTIFIER_MIN_ROWS and share > IDENTIFIER_SHARE:
            log(
                f"warning: column '{c.name}' (--keep) is distinct on {share:.0%} of the rows and is "
                "released as it is; if it identifies people, declare it with --drop"
            )
