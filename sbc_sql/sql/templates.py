"""Load the SQL templates of sql/templates/ and fill their slots through sqlglot's AST.

A template is one query. Identifiers that start with ``__`` are slots:

* a slot bound to a string becomes that name as a quoted identifier;
* a slot followed by a suffix (``__qi_min`` with slot ``__qi``) becomes the name plus the
  suffix, still quoted, so release columns can be named after their source column;
* a slot bound to a sqlglot expression replaces the whole column reference;
* a slot in a table position (``FROM __pairs AS p``) bound to a query becomes that query as
  a subquery under the same alias, so one template can read another's result;
* a slot bound to a list repeats, once per element, the outermost item of a projection,
  GROUP BY, GROUPING SETS, ORDER BY or VALUES list that mentions it; list slots mentioned
  by one item are zipped. Repeated aliases get ``_0``, ``_1``... unless they are slots.

Values never enter this way: they are bound parameters (``$name``).
"""

from __future__ import annotations

import copy
import hashlib
import os
import pickle
import re
import threading
from collections.abc import Mapping, Sequence
from functools import cache
from pathlib import Path

import sqlglot
from sqlglot import exp

from .dialects import SbcDuckDB

#: the dialect the templates are written in (and parsed as)
DIALECT = "duckdb"
SlotValue = str | exp.Expr | Sequence[str] | Sequence[exp.Expr]

# list containers whose items a list slot repeats
_REPEATABLE = (exp.Select, exp.Group, exp.GroupingSets, exp.Order, exp.Tuple, exp.Values)


#: where an installed copy keeps the project's SQL folder: the package ``sbc_sql.sql.text``,
#: which the build maps to ``sql/`` at the repository's root (setup.py)
SHIPPED = Path(__file__).resolve().parent / "text"


def sql_root() -> Path:
    """The project's SQL folder (``templates/``, ``functions/``): shipped inside an installed
    copy, or ``sql/`` at the root of a checkout."""
    return SHIPPED if SHIPPED.is_dir() else Path(__file__).resolve().parents[2] / "sql"


def sql_dir() -> Path:
    """Folder of the query templates."""
    return sql_root() / "templates"


def statements(text: str) -> list[str]:
    """The statements of a file of several (sql/functions/, sql/helpers/): its lines starting
    with ``--`` left out, split at each line holding only ``;``, the one separator that
    cannot occur inside a function's body the way a semicolon ending a line can."""
    body = "\n".join(line for line in text.splitlines() if not line.startswith("--"))
    return [s.strip() for s in re.split(r"^;$", body, flags=re.MULTILINE) if s.strip()]


@cache
def load(name: str) -> str:
    """Template text of sql/templates/<name>.sql."""
    return (sql_dir() / f"{name}.sql").read_text(encoding="utf-8")


@cache
def _parsed(name: str) -> exp.Expression:
    """The template's tree: parsed once per template text and sqlglot version, then kept
    pickled in sql/templates/__pycache__ like Python's own bytecode (parsing the templates of one run
    costs about 50 ms, loading their trees about 5 ms)."""
    text = load(name)
    digest = hashlib.sha256(f"{sqlglot.__version__}\0{text}".encode()).hexdigest()[:16]
    kept = sql_dir() / "__pycache__" / f"{name}.{digest}.pickle"
    try:
        kept_tree: exp.Expression = pickle.loads(kept.read_bytes())
        return kept_tree
    except Exception:  # absent, unreadable or damaged: parse it again
        pass
    body = "\n".join(line for line in text.splitlines() if not line.lstrip().startswith("--"))
    tree = sqlglot.parse_one(body, read=DIALECT)
    if not isinstance(tree, exp.Expression):  # sqlglot types its result as the wider Expr
        raise TypeError(f"template {name!r} does not parse to a statement")
    try:
        kept.parent.mkdir(exist_ok=True)
        scratch = kept.with_name(f"{kept.name}.{os.getpid()}.{threading.get_ident()}")
        scratch.write_bytes(pickle.dumps(tree, protocol=pickle.HIGHEST_PROTOCOL))
        os.replace(scratch, kept)  # atomic: a concurrent run reads a whole file or none
    except OSError:  # a read-only install parses every time
        pass
    return tree


def ident(name: str) -> exp.Identifier:
    """A quoted identifier: any name, however hostile, stays one name."""
    return exp.Identifier(this=name, quoted=True)


def col(name: str, table: str | None = None) -> exp.Column:
    return exp.Column(this=ident(name), table=exp.Identifier(this=table) if table else None)


def render(name: str, **slots: SlotValue) -> exp.Expression:
    """The template as an AST with every slot filled."""
    tree = copy.deepcopy(_parsed(name))
    return fill(tree, slots)


def render_sql(name: str, **slots: SlotValue) -> str:
    """The template with its slots filled, as DuckDB SQL text."""
    return render(name, **slots).sql(dialect=SbcDuckDB)


def fill(tree: exp.Expression, slots: Mapping[str, SlotValue]) -> exp.Expression:
    keys = {f"__{k}": v for k, v in slots.items()}
    lists = {k for k, v in keys.items() if isinstance(v, (list, tuple))}
    _expand(tree, keys, lists)
    tree = _substitute(tree, keys)
    left = sorted({i.name for i in tree.find_all(exp.Identifier) if i.name.startswith("__") and not i.quoted})
    if left:
        raise KeyError(f"template slots not bound: {left}")
    return tree


def _mentions(node: exp.Expression, lists: set[str]) -> list[str]:
    found: list[str] = []
    for ident_node in node.find_all(exp.Identifier):
        name = ident_node.name
        for key in lists:
            if name.startswith(key) and key not in found:
                longer = [k for k in lists if k != key and name.startswith(k) and len(k) > len(key)]
                if not longer:
                    found.append(key)
    return found


def _expand(node: exp.Expression, keys: Mapping[str, SlotValue], lists: set[str]) -> None:
    if not lists:
        return
    for arg_name, value in list(node.args.items()):
        if isinstance(value, list) and isinstance(node, _REPEATABLE) and arg_name == "expressions":
            out: list[exp.Expression] = []
            for item in value:
                if not isinstance(item, exp.Expression):
                    out.append(item)
                    continue
                used = _mentions(item, lists) if not isinstance(item, exp.GroupingSets) else []
                if not used:
                    _expand(item, keys, lists)
                    out.append(item)
                    continue
                lengths = {len(keys[u]) for u in used}  # type: ignore[arg-type]
                if len(lengths) != 1:
                    raise ValueError(f"list slots {used} have different lengths")
                for i in range(lengths.pop()):
                    bound = {u: keys[u][i] for u in used}
                    copy_ = _substitute(copy.deepcopy(item), bound)
                    alias = copy_.args.get("alias") if isinstance(item, exp.Alias) else None
                    if alias is not None and not _was_slot(item):
                        copy_.set("alias", exp.Identifier(this=f"{alias.name}_{i}", quoted=True))
                    out.append(copy_)
            node.set(arg_name, out)
        elif isinstance(value, list):
            for item in value:
                if isinstance(item, exp.Expression):
                    _expand(item, keys, lists)
        elif isinstance(value, exp.Expression):
            _expand(value, keys, lists)


def _was_slot(item: exp.Expression) -> bool:
    alias = item.args.get("alias")
    return alias is not None and alias.name.startswith("__")


def _substitute(tree: exp.Expression, keys: Mapping[str, SlotValue]) -> exp.Expression:
    # Slots are unquoted in the templates; a quoted identifier is a name already filled in
    # (a column called "__source" must stay that column, not become the source table).
    def replace(node: exp.Expression) -> exp.Expression:
        if (
            isinstance(node, exp.Table)
            and not node.args.get("db")
            and isinstance(node.this, exp.Identifier)
            and node.this.name.startswith("__")
            and not node.this.quoted
        ):
            hit = _slot_of_bound(node.this.name, keys)
            if hit is not None and isinstance(hit[0], exp.Query) and not hit[1]:
                return exp.Subquery(this=copy.deepcopy(hit[0]), alias=node.args.get("alias"))
        if (
            isinstance(node, exp.Column)
            and not node.table
            and node.name.startswith("__")
            and not node.this.quoted
        ):
            hit = _slot_of_bound(node.name, keys)
            if hit is not None:
                value, suffix = hit
                if isinstance(value, exp.Expression):
                    if suffix:
                        raise ValueError(f"expression slot {node.name!r} cannot take a suffix")
                    return copy.deepcopy(value)
        if isinstance(node, exp.Identifier) and node.name.startswith("__") and not node.quoted:
            hit = _slot_of_bound(node.name, keys)
            if hit is not None:
                value, suffix = hit
                if isinstance(value, str):
                    return ident(value + suffix)
        return node

    return tree.transform(replace, copy=False)


def _slot_of_bound(name: str, keys: Mapping[str, SlotValue]) -> tuple[SlotValue, str] | None:
    best = max((k for k in keys if name.startswith(k)), key=len, default=None)
    if best is None:
        return None
    value = keys[best]
    if isinstance(value, (list, tuple)):
        return None
    return value, name[len(best) :]
