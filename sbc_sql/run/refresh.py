"""Refresh an incremental release: the source's rows it has not seen are added without
changing anything it has published.

A release made with ``incremental=True`` (``--incremental``) keeps a ledger of the rows it
released and of those pending (:mod:`sbc_sql.stages.ledger`). A refresh makes version n
from version n - 1:

1. **read**: the release's provenance (its roles, k, criteria and options), the source's
   rows beyond the ledger's counts (new rows, and rows pending since earlier versions);
   a release whose tables no longer hold what its last version recorded, or a source that
   lacks rows the release holds (deleted, or changed), is refused;
2. **place**: each new row lies inside some published classes (its QIs within their ranges
   and sets); a class takes a group of at least k of them that keeps the criteria on its
   own (:mod:`sbc_sql.cluster.placement`), and its generalization does not change;
3. **cluster** the rest among themselves, as the release's run would (its algorithm,
   options and criteria), into new classes; what cannot be placed waits, pending;
4. **write**, in one transaction: the rows added under version n, the new classes, the
   class sizes, the ledger and the pending rows, the provenance with the version chain;
   then **verify** before committing: version n - 1 contained in version n unchanged (its
   digest), the rows of version n alone as a release of their own (k, every criterion,
   their values those of new source rows), the classes version n changed with all their
   rows (k, every criterion), and every source row released or pending.

So version n holds version n - 1 exactly, and what one refresh adds is, taken alone, a
k-anonymous release that keeps the criteria: comparing two versions discloses no more than
such a release of the new rows. Criteria that compare a class with the whole table's
distribution (t-closeness, beta-likeness) are refused: every load moves that distribution,
and a published class cannot follow it.
"""

from __future__ import annotations

import contextlib
import json
import secrets
import time
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa

from .. import engines, provenance
from ..cluster.placement import place
from ..cluster.sensitive import Sensitive
from ..engines.base import Engine
from ..errors import InputError, VerificationError
from ..model import Column, ledger_objects_of, release_objects_of
from ..plan import CLASS_SIZE
from ..privacy.criteria import Criteria, models, recorded_criteria
from ..sql.matching import inside, pairs_match, pairs_sql
from ..sql.nodes import conj
from ..sql.templates import render
from ..stages import audit, ledger, measure, verify, write
from ..stages.measure import Layout
from .lines import Log, warnings_only

#: why rows wait, in words (the pending table's reasons)
TOO_FEW = "fewer than k new rows that could form a class keeping the criteria"
NOT_FORMED = "left out when the new rows were clustered (no class of k keeping the criteria)"
#: the share of its rows a refresh's clustering of the new rows may leave pending
PENDING_SHARE = 0.999


@dataclass(frozen=True)
class Refreshed:
    """What a refresh did: the version it made (the release's last, unchanged when there
    was nothing new), the rows it added, placed into published classes or in new ones, the
    rows pending after it (by reason), and the verification's facts."""

    release: str
    version: int
    parent: int | None
    rows_added: int
    placed_in_existing: int
    classes_added: int
    pending: int
    pending_by: Mapping[str, int] = field(default_factory=dict)
    facts: Mapping[str, int] = field(default_factory=dict)
    seconds: float = 0.0

    def as_dict(self) -> dict[str, Any]:
        return {
            "release": self.release,
            "release_version": self.version,
            "parent": self.parent,
            "rows_added": self.rows_added,
            "placed_in_existing": self.placed_in_existing,
            "classes_added": self.classes_added,
            "pending": self.pending,
            "pending_by": dict(self.pending_by),
            "seconds": round(self.seconds, 4),
        }


@dataclass(frozen=True)
class _Release:
    """An incremental release as a refresh reads it."""

    name: str
    source: str
    layout: Layout
    columns: tuple[Column, ...]
    document: Mapping[str, Any]
    k: int
    criteria: Mapping[str, Any]

    @property
    def rows(self) -> str:
        return release_objects_of(self.name)[1]

    @property
    def classes(self) -> str:
        return release_objects_of(self.name)[2]

    @property
    def seen(self) -> str:
        return ledger_objects_of(self.name)[0]

    @property
    def pending(self) -> str:
        return ledger_objects_of(self.name)[1]

    @property
    def versions(self) -> list[Mapping[str, Any]]:
        return list(self.document["versions"])

    @property
    def last(self) -> int:
        return int(self.versions[-1]["version"])


def refresh(database: str | Path | Engine | Any, release: str, *, log: Log | None = None) -> Refreshed:
    """Add the source's rows that the incremental release ``release`` has not seen (see the
    module's docstring); returns what was done. Nothing is written unless the new version
    verifies."""
    engine = engines.connect(database, must_exist=True)
    try:
        return _refresh(engine, release, log or warnings_only)
    finally:
        if engine is not database:
            engine.close()


def _located(engine: Engine, release: str) -> tuple[str, tuple[str, str] | None]:
    """``release`` as the engine reads it: a release of another schema (``s.t_k5``) makes
    that schema the working one, its name then bare; and the working schema before, from
    which an unqualified source the release records was read (None: unchanged)."""
    place = engine.parse_name(release)
    if not place.qualified:
        return release, None
    before = engine.working()
    engine.use(place.catalog, place.schema)
    return place.name, before


def _source(engine: Engine, source: str) -> str:
    """The source as the statements name it: a qualified name of the working schema bare; of
    another schema or database, read into a temporary copy under that name (as verify reads
    one); a name that exists nowhere as it is."""
    place = engine.parse_name(source)
    if not place.qualified:
        return source
    catalog, schema = engine.working()
    if place.schema == schema and place.catalog in (None, catalog):
        return place.name
    if engine.identities([source]):
        engine.copy_in(source)
    return source


def _read(engine: Engine, release: str) -> _Release:
    if not engine.capabilities.release_views:
        raise InputError(
            f"refresh is not available with the {engine.name} engine; refresh on DuckDB or PostgreSQL"
        )
    release, before = _located(engine, release)
    if not engine.table_exists(release):
        raise InputError(
            f"release '{release}' does not exist in the database; pass an existing one with --release"
        )
    recorded = provenance.parse(engine.comment(release))
    if recorded is None or "versions" not in recorded.document:
        raise InputError(
            f"release '{release}' keeps no ledger of the rows it has seen, so its new rows cannot be "
            "told apart; make it with anonymize --incremental (then refresh adds the rows it has not seen)"
        )
    doc = recorded.document
    criteria = recorded_criteria(doc)
    asked = Criteria(**criteria)
    rule = asked.rule()
    if rule.reads_input:
        raise InputError(
            f"release '{release}' keeps {rule.describe()}, which compares each class with the whole "
            "table's distribution; every load moves it and a published class cannot follow: "
            "re-anonymize the table with anonymize --replace --incremental"
        )
    source = str(doc["source"])
    if before is not None and not engine.parse_name(source).qualified:
        # the source the run read, named from the working schema of then
        source = str(engine.parse_name(source).within(*before))
    source = _source(engine, source)
    for name in (source, *release_objects_of(release)[1:3], *ledger_objects_of(release)):
        if not engine.table_exists(name):
            raise InputError(
                f"'{name}' of release '{release}' does not exist in the database; a refresh needs the "
                "source, the release's tables and its ledger: re-anonymize with anonymize --replace "
                "--incremental"
            )
    read = audit.read(engine, source, release)
    if read.problems:
        raise InputError(
            f"release '{release}' does not read as its provenance says ({read.problems[0]}); "
            "run sbc-sql verify on it"
        )
    return _Release(release, source, read.layout, read.columns, doc, recorded.k, criteria)


def _refresh(engine: Engine, release: str, say: Log) -> Refreshed:
    t = time.perf_counter()
    rel = _read(engine, release)
    recorded = rel.versions[-1]
    tag = secrets.token_hex(4)
    unseen = f"sbc_refresh_{tag}_new"
    with _scratch(engine, tag):
        engine.execute(ledger.unseen_sql(unseen, rel.source, rel.seen, rel.columns))
        (n_new,) = engine.fetch_one(render("row_count", source=unseen))
        n_new = int(n_new)
        # every source row is either one the ledger counts or unseen: the ledger's rows
        # beyond those are rows the source no longer holds
        (n_source,) = engine.fetch_one(render("row_count", source=rel.source))
        counted, _, _ = engine.fetch_one(ledger.totals_sql(rel.seen, rel.pending, rel.rows))
        gone = int(counted) - (int(n_source) - n_new)
        if gone:
            raise InputError(
                f"the source '{rel.source}' lacks {gone:,} row(s) that release '{release}' holds "
                "(deleted, or changed on a column the release holds); a refresh only adds rows, as "
                "removing them would change published classes: re-anonymize with anonymize --replace "
                "--incremental for a new release, and withdraw the old one"
            )
        if n_new == 0:
            say(f"refresh: '{release}' has seen every row of '{rel.source}'; version {rel.last} stands")
            return Refreshed(
                release,
                rel.last,
                None,
                0,
                0,
                0,
                int(recorded.get("pending") or 0),
                {},
                {},
                time.perf_counter() - t,
            )
        (n_classes,) = engine.fetch_one(render("row_count", source=rel.classes))
        keys = tuple(verify.join_keys(engine, rel.layout, unseen, rel.classes, int(n_classes), n_new))
        labels = _placed(engine, rel, unseen, n_new, keys)
        rest = np.flatnonzero(labels < 0)
        formed = _formed(engine, rel, unseen, rest, tag) if len(rest) >= rel.k else None
        return _write(engine, rel, unseen, labels, keys, rest, formed, tag, t, say)


@contextlib.contextmanager
def _scratch(engine: Engine, tag: str) -> Iterator[None]:
    """The refresh's working tables (named after ``tag``), dropped on the way out, whatever
    happened."""
    try:
        yield
    finally:
        prefix = f"sbc_refresh_{tag}"
        names = [f"{prefix}_new", f"{prefix}_rest"]
        names += [*release_objects_of(prefix), *ledger_objects_of(prefix)]
        kinds = engine.object_kinds(names)
        with contextlib.suppress(Exception):
            for tree in write.drop_release_sql(kinds, names):
                engine.execute(tree)


def _placed(engine: Engine, rel: _Release, unseen: str, n_new: int, keys: Sequence[Column]) -> np.ndarray:
    """The published class each new row joins (-1: none); ``keys``: the QIs whose values
    join the new rows to the classes (:func:`~sbc_sql.stages.verify.join_keys`)."""
    tree = render(
        "refresh_candidates",
        unseen=unseen,
        classes=rel.classes,
        pairs=pairs_sql(keys, unseen, rel.classes),
        match=pairs_match(keys, "n", "p"),
        inside=conj([inside(c, "n", "c") for c in rel.layout.qis]),
    )
    with engine.hashed_joins():
        found = engine.fetch_arrow(tree)
    rows = found.column(0).to_numpy().astype(np.int64)
    classes = found.column(1).to_numpy().astype(np.int64)
    rule = Criteria(**rel.criteria).rule()
    group_ok = None
    if rule.active:
        sensitive = _sensitive(engine, rel, unseen)
        sizes = [len(c) for c in sensitive.counts]

        def group_ok(members: np.ndarray) -> bool:
            counts = [np.bincount(sensitive.codes[s][members], minlength=sizes[s]) for s in range(len(sizes))]
            return rule.ok(counts, len(members), sensitive)

    return place(rows, classes, n_new, rel.k, group_ok)


def _sensitive(engine: Engine, rel: _Release, unseen: str) -> Sensitive:
    """The new rows' sensitive values as codes, in row order (sbc_row), NULL a code of its
    own; their counts are the new rows' (the criteria a refresh keeps read no shares)."""
    import pyarrow.compute as pc

    columns = [c for c in rel.layout.verbatim if c.role == "sensitive"]
    table = engine.fetch_arrow(render("refresh_sensitive", unseen=unseen, sens=[c.name for c in columns]))
    codes, counts = [], []
    for i in range(len(columns)):
        encoded = pc.dictionary_encode(table.column(i).combine_chunks(), null_encoding="encode")
        code = encoded.indices.to_numpy(zero_copy_only=False).astype(np.int32)
        codes.append(code)
        counts.append(np.bincount(code, minlength=len(encoded.dictionary)).astype(np.int64))
    ordered = tuple(False for _ in columns)
    return Sensitive(tuple(c.name for c in columns), tuple(codes), tuple(counts), ordered)


def _formed(engine: Engine, rel: _Release, unseen: str, rest: np.ndarray, tag: str) -> str | None:
    """The new rows no published class took, clustered among themselves as the release's
    run would, into a release of their own (named ``sbc_refresh_<tag>``, incremental, so
    that its ledger tells which rows it released); None when they cannot form one."""
    from . import anonymize

    remaining, scratch = f"sbc_refresh_{tag}_rest", f"sbc_refresh_{tag}"
    source_columns = [c.name for c in engine.describe(rel.source).columns]
    ids = pa.table({"sbc_row": pa.array(rest, pa.int64())})
    with engine.upload(f"sbc_refresh_{tag}_ids", ids):
        engine.execute(
            render(
                "refresh_rest",
                rest=remaining,
                unseen=unseen,
                ids=f"sbc_refresh_{tag}_ids",
                col=source_columns,
            )
        )
    options = rel.document.get("options") or {}
    roles = {c.name: c.role for c in rel.columns}
    named = {
        role: [n for n, r in roles.items() if r == role]
        for role in ("qi", "sensitive", "insensitive", "identifier")
    }
    try:
        anonymize(
            engine,
            remaining,
            rel.k,
            qi=named["qi"],
            sensitive=named["sensitive"],
            keep=named["insensitive"],
            drop=named["identifier"],
            # a code beside its label was let (or absent) over the whole table: a few new
            # rows alone prove nothing either way
            allow_determinant=named["insensitive"],
            output=scratch,
            leftover=str(options.get("leftover") or "nearest"),
            weights=dict(options.get("weights") or {}) or None,
            algorithm=str(rel.document.get("algorithm") or "sbca"),
            max_suppression=PENDING_SHARE,
            max_width=dict(options.get("max_width") or {}) or None,
            max_values=dict(options.get("max_values") or {}) or None,
            incremental=True,
            log=lambda _: None,
            **rel.criteria,
        ).close()
    except InputError:
        # the new rows alone cannot reach k or the criteria (too few, too alike): they wait
        return None
    return scratch


def _write(
    engine: Engine,
    rel: _Release,
    unseen: str,
    labels: np.ndarray,
    keys: Sequence[Column],
    rest: np.ndarray,
    formed: str | None,
    tag: str,
    started: float,
    say: Log,
) -> Refreshed:
    """Version n written in one transaction and verified before it commits."""
    version = rel.last + 1
    verbatim = [c.name for c in rel.layout.verbatim]
    placed_rows = np.flatnonzero(labels >= 0)
    placed_name, waiting_name = f"sbc_refresh_{tag}_placed", f"sbc_refresh_{tag}_waiting"
    placed = pa.table(
        {"sbc_row": pa.array(placed_rows, pa.int64()), "eq_class": pa.array(labels[placed_rows], pa.int64())}
    )
    class_columns = [c.name for c in engine.describe(rel.classes).columns if c.name != "eq_class"]
    formed_rows = formed_classes = 0
    with (
        engine.upload(placed_name, placed),
        engine.upload(waiting_name, _waiting(rest, formed)),
        engine.transaction(),
    ):
        (top,) = engine.fetch_one(render("max_class", classes=rel.classes))
        offset = int(top) + 1 if top is not None else 0
        added = render("refresh_placed", unseen=unseen, placed=placed_name, verb=verbatim)
        engine.execute(
            render("refresh_rows", rows=rel.rows, added=added, verb=verbatim), {"version": version}
        )
        engine.execute(render("refresh_sizes", classes=rel.classes, placed=placed_name))
        engine.execute(ledger.add_sql(rel.seen, unseen, placed_name))
        engine.execute(render("delete_all", table=rel.pending))
        if formed is not None:
            f_rows, f_classes = release_objects_of(formed)[1:3]
            f_seen, f_pending = ledger_objects_of(formed)
            (formed_classes,) = engine.fetch_one(render("row_count", source=f_classes))
            (formed_rows,) = engine.fetch_one(render("row_count", source=f_rows))
            engine.execute(
                render("refresh_classes", classes=rel.classes, formed=f_classes, cols=class_columns),
                {"offset": offset},
            )
            moved = render("refresh_formed_rows", formed=f_rows, verb=verbatim)
            engine.execute(
                render("refresh_rows", rows=rel.rows, added=moved, verb=verbatim),
                {"version": version, "offset": offset},
            )
            engine.execute(render("ledger_copy", into=rel.seen, source=f_seen))
            engine.execute(
                render("ledger_reasons", into=rel.pending, source=f_pending), {"reason": NOT_FORMED}
            )
        engine.execute(ledger.waiting_sql(rel.pending, unseen, waiting_name))
        result = _verify_and_record(
            engine,
            rel,
            unseen,
            len(labels),
            keys,
            version,
            f"sbc_refresh_{tag}_delta",
            len(placed_rows),
            int(formed_rows),
            int(formed_classes),
            started,
        )
    say(
        f"refresh: '{rel.name}' version {version}: {result.rows_added:,} rows added "
        f"({result.placed_in_existing:,} into published classes, {result.classes_added:,} new classes), "
        f"{result.pending:,} pending"
    )
    return result


def _waiting(rest: np.ndarray, formed: str | None) -> pa.Table:
    """The new rows that wait without having been clustered (too few for a class of their
    own), with why."""
    rows = np.asarray(rest if formed is None else rest[:0], dtype=np.int64)
    return pa.table(
        {"sbc_row": pa.array(rows, pa.int64()), "reason": pa.array([TOO_FEW] * len(rows), pa.string())}
    )


def _verify_and_record(
    engine: Engine,
    rel: _Release,
    unseen: str,
    n_new: int,
    keys: Sequence[Column],
    version: int,
    delta: str,
    placed: int,
    formed_rows: int,
    formed_classes: int,
    started: float,
) -> Refreshed:
    """Inside the refresh's transaction: version n verified, then its provenance written.
    Verified: version n - 1 contained in it unchanged (its digest), the rows version n adds
    alone (k, every criterion, one generalized tuple per class, their values those of new
    source rows inside their classes, every new row released or pending), and the whole
    version: the classes it added rows to, with all their rows (k, every criterion, one
    tuple per class; every other class is as version n - 1 left it, which the digest
    shows, and was verified then), and every source row released or pending. Raises
    VerificationError, and the transaction rolls back."""

    layout = rel.layout
    asked = Criteria(**rel.criteria)
    sensitive = [c for c in rel.columns if c.role == "sensitive"]
    checked = models(rel.k, asked, sensitive if asked.asked else ())
    problems: list[str] = []
    parent, digest = ledger.digests(engine, rel.rows, rel.classes, rel.columns, rel.last, version)
    if parent != rel.versions[-1].get("digest"):
        problems.append(
            f"version {rel.last} is not contained unchanged in version {version} (a class or a row of "
            "it was changed by hand since it was published); re-anonymize with anonymize --replace "
            "--incremental"
        )
    pending_by = {str(r): int(n) for r, n in engine.fetch_all(render("pending_reasons", pending=rel.pending))}
    pending = sum(pending_by.values())
    rows_added = placed + formed_rows
    if rows_added:
        problems += _delta_problems(engine, rel, unseen, n_new, keys, version, checked, pending)
    elif pending != n_new:
        problems.append(f"{n_new:,} new rows, none released, and {pending:,} pending")
    whole: list[str] = []
    if rows_added:
        # the classes this version changed, whole (the others are as version n - 1 left
        # them, verified then, which its digest shows)
        touched = f"{delta}_touched"
        projection = write.release_projection(rel.columns)
        engine.execute(ledger.touched_sql(touched, rel.rows, rel.classes, projection), {"version": version})
        try:
            changed, _ = verify.check_release(engine, layout, touched, rel.k, checked, touched)
        finally:
            engine.discard(touched)
        whole += [f"the classes version {version} added rows to: {p}" for p in changed]
    (n_source,) = engine.fetch_one(render("row_count", source=rel.source))
    (released,) = engine.fetch_one(render("row_count", source=rel.rows))
    (n_classes,) = engine.fetch_one(render("row_count", source=rel.classes))
    facts = {"released": int(released), "classes": int(n_classes)}
    if int(n_source) != facts["released"] + pending:
        whole.append(
            f"the source has {int(n_source):,} rows: {facts['released']:,} released and {pending:,} "
            "pending do not add up to them"
        )
    problems += whole
    if problems:
        raise VerificationError(
            f"version {version} of '{rel.name}' failed verification, nothing was written: "
            + "; ".join(problems)
        )
    facts.update(source_rows=int(n_source), suppressed=pending)
    doc = json.loads(json.dumps(rel.document))
    doc["rows"] = {
        "input": int(n_source),
        "released": facts["released"],
        "suppressed": pending,
        "suppressed_by": {f"pending: {r}": n for r, n in pending_by.items()},
    }
    doc["classes"] = facts["classes"]
    # its rows not released wait, pending: no longer the first run's suppression budget's
    doc["refreshed"] = True
    if rows_added:
        doc["versions"].append(
            {
                "version": version,
                "parent": rel.last,
                "rows_added": rows_added,
                "placed_in_existing": placed,
                "classes_added": formed_classes,
                "pending": pending,
                "digest": digest,
            }
        )
    else:
        # nothing added: the version stands, with the rows that now wait
        doc["versions"][-1] = {**doc["versions"][-1], "pending": pending}
    doc["measures"] = provenance_measures(engine, layout, rel.source, rel.classes)
    text = provenance.to_json(doc)
    for name, kind in ((rel.name, "VIEW"), (rel.rows, "TABLE"), (rel.classes, "TABLE")):
        engine.execute(write.comment_sql(name, kind, text))
    return Refreshed(
        rel.name,
        version if rows_added else rel.last,
        rel.last if rows_added else None,
        rows_added,
        placed,
        formed_classes,
        pending,
        pending_by,
        facts,
        time.perf_counter() - started,
    )


def _delta_problems(
    engine: Engine,
    rel: _Release,
    unseen: str,
    n_new: int,
    keys: Sequence[Column],
    version: int,
    checked: Sequence[Any],
    pending: int,
) -> list[str]:
    """The rows ``version`` adds, taken alone: a release keeping k and the criteria, one
    generalized tuple per class, its values those of new source rows inside their classes,
    and every new row released or pending."""
    with verify.version_rows(engine, rel.rows, rel.classes, rel.columns, version) as delta:
        added, facts = verify.check_release(engine, rel.layout, delta, rel.k, checked, delta)
        facts["suppressed"] = n_new - facts["released"]
        if facts["suppressed"] != pending:
            added.append(
                f"{n_new:,} new rows: {facts['released']:,} released and {pending:,} pending, so "
                f"{n_new - facts['released'] - pending:,} are neither"
            )
        added += verify.values_problems(engine, rel.layout, unseen, delta, facts, n_new, keys)
    return [f"the rows version {version} adds, taken alone: {p}" for p in added]


def provenance_measures(engine: Engine, layout: Layout, source: str, classes: str) -> dict[str, Any]:
    """The measures a provenance records of a release (counts left to verification)."""
    m = measure.measure_tables(engine, layout, source, classes, None, CLASS_SIZE)
    return {k: v for k, v in m.as_dict().items() if k not in ("rows", "released", "suppressed", "classes")}


__all__: Sequence[str] = ("Refreshed", "refresh")
