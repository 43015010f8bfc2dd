"""The Spark engine's transaction: nothing is written to the catalog or to a file until it
commits. A COMMENT statement (a release's provenance) is kept, and the commit writes each
release whose provenance it holds, with its class table, under temporary names, then renames
them into place. A failure or an interruption before the last rename removes what was
written and leaves any output that was there before as it was."""

from __future__ import annotations

import contextlib
import re
import secrets
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from sqlglot import exp

from ...errors import InputError
from ...model import release_objects_of
from ..paths import looks_like_path
from .catalog import SparkCatalog
from .columns import type_info
from .connection import quoted
from .files import PROVENANCE_FILE


@dataclass
class Transaction:
    """What a transaction made: its views (dropped by a rollback) and its comments (the
    provenance of each release it builds)."""

    views: set[str] = field(default_factory=set)
    comments: dict[str, tuple[str, str]] = field(default_factory=dict)


@dataclass
class Write:
    """One object of a release being written: the view that holds it, where it goes, and
    the temporary place it is written to first."""

    view: str
    target: str
    path: bool
    partial: str
    old: str
    provenance: str
    #: an object was at the target before the commit (which --replace replaces)
    existed: bool = False


class SparkTransaction(SparkCatalog):
    """The Spark engine's transaction and its commit."""

    def __init__(self, session: Any, *, owned: bool = False) -> None:
        super().__init__(session, owned=owned)
        self._txn: Transaction | None = None
        #: the input's paths and the outputs named, qualified: no output may be an input,
        #: hold one or lie in one
        self._inputs: list[str] = []
        self._outputs: list[str] = []

    def comment(self, name: str) -> str | None:
        if self._txn is not None and name in self._txn.comments:
            return self._txn.comments[name][1]
        if name in self._views or name in self._frames or name == self._source:
            return None
        if looks_like_path(name):
            path = self._paths.get(name) or self._qualified_path(name)
            return self._read_text(f"{path}/{PROVENANCE_FILE}")
        with self._driver(f"reading the comment of '{name}'"):
            full = self._catalog_name(name) if self._database is not None else quoted(name)
            if not self.session.catalog.tableExists(full):
                return None
            description = self.session.catalog.getTable(full).description
        return str(description) if description else None

    def begin(self) -> None:
        self._txn = Transaction()

    def commit(self) -> None:
        txn = self._txn
        if txn is None:
            return
        writes = self._planned_writes(txn)
        try:
            for w in writes:
                with self._driver(lambda w=w: f"looking up '{w.target}'"):
                    w.existed = self._there(w.target, w.path)
            for w in writes:
                self._write(w)
            self._place(writes)
        except BaseException:
            self._cancel()
            self._undo(writes)
            raise
        self._txn = None
        for w in writes:
            with contextlib.suppress(Exception):
                self._remove(w.old, w.path)
        for name in txn.views:
            with contextlib.suppress(Exception):
                self._drop_view(name)

    def rollback(self) -> None:
        txn, self._txn = self._txn, None
        if txn is None:
            return
        for name in txn.views:
            with contextlib.suppress(Exception):
                self._drop_view(name)

    def _planned_writes(self, txn: Transaction) -> list[Write]:
        token = secrets.token_hex(4)
        writes: list[Write] = []
        for release, (kind, text) in txn.comments.items():
            if kind != "VIEW":
                continue
            classes = release_objects_of(release)[2]
            for view in (release, classes):
                target = self.parse_name(view)
                if target.path:
                    self._check_place(target.name)
                    folder, _, base = target.name.rstrip("/").rpartition("/")
                    partial, old = (
                        f"{folder}/.sbc-partial-{token}-{base}",
                        f"{folder}/.sbc-old-{token}-{base}",
                    )
                    writes.append(Write(view, target.name, True, partial, old, text))
                else:
                    short = re.sub(r"\W", "_", view)[:40]
                    writes.append(
                        Write(
                            view,
                            view,
                            False,
                            f"sbc_partial_{token}_{short}",
                            f"sbc_old_{token}_{short}",
                            text,
                        )
                    )
        return writes

    def _check_place(self, path: str) -> None:
        """No output may be an input, hold one or lie inside one (nor its class table)."""
        for source in self._inputs:
            for place in (path, release_objects_of(path)[2]):
                a, b = place.rstrip("/") + "/", source.rstrip("/") + "/"
                if a.startswith(b) or b.startswith(a):
                    raise InputError(
                        f"--output '{path}' would write over the input '{source}' or inside it; "
                        "choose another --output"
                    )

    def _write(self, w: Write) -> None:
        with self._driver(lambda: f"writing '{w.target}'"):
            frame = self.session.table(quoted(w.view))
            orderable = [
                f.name
                for f in frame.schema.fields
                if type_info(f.dataType)[1] is not None or f.name == "eq_class"
            ]
            frame = frame.orderBy(*(frame[quoted(n)] for n in orderable))
            if w.path:
                frame.write.mode("errorifexists").parquet(w.partial)
                self._write_text(f"{w.partial}/{PROVENANCE_FILE}", w.provenance)
            else:
                frame.write.format("parquet").saveAsTable(self._catalog_name(w.partial))
                comment = exp.Literal.string(w.provenance).sql(dialect=self.dialect)
                self.session.sql(f"COMMENT ON TABLE {self._catalog_name(w.partial)} IS {comment}")

    def _place(self, writes: Sequence[Write]) -> None:
        """Each written object renamed into place, any object there before moved aside
        first (and removed once all are in place)."""
        for w in writes:
            with self._driver(lambda w=w: f"moving '{w.target}' into place"):
                if w.existed:
                    self._rename(w.target, w.old, w.path)
                self._rename(w.partial, w.target, w.path)

    def _there(self, name: str, path: bool) -> bool:
        """A folder or file (``path``), or a table of the working database, of that name
        exists."""
        if path:
            return self._exists(name)
        return bool(self.session.catalog.tableExists(self._catalog_name(name)))

    def _rename(self, old: str, new: str, path: bool) -> None:
        if path:
            fs, p = self._fs(old)
            if not fs.rename(p, self._fs(new)[1]):
                raise OSError("rename failed")
        else:
            self.session.sql(f"ALTER TABLE {self._catalog_name(old)} RENAME TO {quoted(new)}")

    def _remove(self, target: str, path: bool) -> None:
        with self._driver(f"removing '{target}'"):
            if path:
                fs, p = self._fs(target)
                if fs.exists(p):
                    fs.delete(p, True)
            elif self.session.catalog.tableExists(self._catalog_name(target)):
                self.session.sql(f"DROP TABLE {self._catalog_name(target)}")

    def _undo(self, writes: Sequence[Write]) -> None:
        """After a failure, from what is there (a call Ctrl-C interrupted may or may not
        have renamed): an object moved aside goes back to its place, one this commit
        placed where none was is removed, and the partial writes go."""
        for w in reversed(writes):
            with contextlib.suppress(Exception), self._driver(lambda w=w: f"restoring '{w.target}'"):
                if self._there(w.old, w.path):
                    if self._there(w.target, w.path):
                        self._remove(w.target, w.path)
                    self._rename(w.old, w.target, w.path)
                elif not w.existed and not self._there(w.partial, w.path) and self._there(w.target, w.path):
                    self._remove(w.target, w.path)
                self._remove(w.partial, w.path)
