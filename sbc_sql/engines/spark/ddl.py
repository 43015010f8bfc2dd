"""The stages' statements as the Spark engine runs them: a table the stages create is a cached
temporary view (CACHE TABLE ... AS), a view a temporary view, a rename a temporary view of the
new name over the old one, a drop the view's. Nothing here runs a statement."""

from __future__ import annotations

from sqlglot import exp

from ...sql.dialects.spark import SbcSpark
from ...sql.templates import ident


def target(tree: exp.Create) -> exp.Table:
    target = tree.this
    table = target.this if isinstance(target, exp.Schema) else target
    if not isinstance(table, exp.Table):
        raise TypeError("expected CREATE of a table or view")
    return table


def renamed(tree: exp.Expression) -> tuple[str, str] | None:
    """(old, new) of an ALTER TABLE ... RENAME TO statement; None for any other."""
    if not isinstance(tree, exp.Alter):
        return None
    action = next((a for a in tree.args.get("actions") or [] if isinstance(a, exp.AlterRename)), None)
    return None if action is None else (tree.this.name, action.this.name)


def parsed(sql: str) -> exp.Expression | None:
    import sqlglot

    try:
        tree = sqlglot.parse_one(sql, dialect=SbcSpark)
    except sqlglot.errors.SqlglotError:
        return None
    return tree if isinstance(tree, exp.Expression) else None


def rewritten(tree: exp.Expression) -> exp.Expression:
    """A stage's statement as the Spark engine runs it: tables the stages create are cached
    temporary views, views are temporary views, their renames and drops the views'."""
    if isinstance(tree, exp.Create):
        kind = str(tree.args.get("kind") or "").upper()
        query = tree.args.get("expression")
        if kind == "TABLE" and isinstance(query, exp.Query):
            return exp.Cache(this=target(tree).copy(), expression=query.copy())
        if kind == "VIEW":
            temporary = tree.copy()
            temporary.set("replace", True)
            temporary.set("properties", exp.Properties(expressions=[exp.TemporaryProperty()]))
            return temporary
        return tree
    rename = renamed(tree)
    if rename is not None:
        # a view of the new name over the old one (which keeps the cached rows): Spark's
        # ALTER VIEW ... RENAME of a temporary view leaves a view made over a view of the
        # renamed one unresolvable (TABLE_OR_VIEW_NOT_FOUND)
        old, new = rename
        return exp.Create(
            this=exp.Table(this=ident(new)),
            kind="VIEW",
            replace=True,
            properties=exp.Properties(expressions=[exp.TemporaryProperty()]),
            expression=exp.select(exp.Star()).from_(exp.Table(this=ident(old))),
        )
    if isinstance(tree, exp.Drop) and str(tree.args.get("kind") or "").upper() in ("TABLE", "VIEW"):
        dropped = tree.copy()
        dropped.set("kind", "VIEW")
        dropped.set("exists", True)
        return dropped
    return tree
