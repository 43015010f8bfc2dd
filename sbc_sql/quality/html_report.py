"""The release report (``sbc-sql report``, ``anonymize --report``, :func:`sbc_sql.report`):
one self-contained HTML page on how a release was made, the risk before and after it, what
it cost and what each figure means, opened by a verdict (:mod:`sbc_sql.quality.verdict`).

:func:`report` checks its arguments and the page's path before any work, opens the
database read-only, measures the page's figures (:mod:`sbc_sql.quality.report_figures`),
renders the page (:mod:`sbc_sql.quality.report_render`, the Jinja2 templates in
``templates/``) and writes it atomically: a temporary file beside the target,
renamed over it once complete.

**No cell value** enters the page: only column names, counts and figures. The sensitive
column is shown as a histogram of its diversity per class, never as its values. The page
holds no script and loads nothing: its CSS is inline, its charts are inline SVG (each mark
carries its figure in ``data-*`` attributes), and it scales to a phone's width.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .. import engines
from ..engines.base import Engine
from ..errors import InputError, OutputExistsError
from ..plan import check_writable_path, same_file
from . import population_keys
from .report_figures import BANDS, DEFAULT_CURVE_K, ReportFigures, measure, scratch_for
from .report_render import render_page

__all__ = ["BANDS", "DEFAULT_CURVE_K", "Report", "check_path", "parse_curve_k", "report", "write_atomically"]


@dataclass
class Report(ReportFigures):
    """What :func:`report` measured, the page and where it was written (None: not written)."""

    html: str = ""
    path: Path | None = None


# ---------------------------------------------------------------------------------------
# the output file


def parse_curve_k(text: str) -> list[int]:
    """--curve-k '2,5,10' -> [2, 5, 10]; 'none' (or nothing) -> no curve."""
    if text.strip().lower() in ("", "none"):
        return []
    ks = []
    for part in (p.strip() for p in text.split(",")):
        if not part:
            continue
        if not part.isdigit() or int(part) < 2:
            raise InputError(
                f"--curve-k '{text}': '{part}' is not a k of 2 or more; write e.g. --curve-k 2,5,10 "
                "(or --curve-k none for no curve)"
            )
        ks.append(int(part))
    return ks


def check_path(
    path: str | Path, *, replace: bool, flag: str = "--output", protected: Iterable[Any] = ()
) -> Path:
    """The page's path, checked before any work: an existing file only with ``--replace``,
    never one of the ``protected`` files (the database), in a folder that can be written."""
    path = Path(path)
    for other in protected:
        if isinstance(other, (str, Path)) and Path(other).exists() and same_file(path, Path(other)):
            raise InputError(f"{flag} '{path}' is '{other}', which the run reads; choose another {flag}")
    if path.exists() and not path.is_dir() and not replace:
        raise OutputExistsError(
            f"{flag} '{path}' already exists; pass --replace to overwrite it or choose another {flag}"
        )
    return check_writable_path(path, flag)


def write_atomically(path: str | Path, text: str) -> Path:
    """``text`` into ``path`` through a temporary file beside it, renamed over it once
    written: an interrupted run leaves the old file (or none), never half a page."""
    path = Path(path)
    fd, temp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".partial", dir=path.parent or ".")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(text)
        # a temporary file is private; the page gets the mode any new file of this user gets
        mask = os.umask(0)
        os.umask(mask)
        os.chmod(temp, 0o666 & ~mask)
        os.replace(temp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temp)
        raise
    return path


def report(
    database: str | Path | Engine | Any,
    original: str,
    release: str,
    output: str | Path | None = None,
    *,
    curve_k: Iterable[int] | None = DEFAULT_CURVE_K,
    sensitive: str | None = None,
    replace: bool = False,
    attach: Iterable[str] = (),
    log: Callable[[str], None] | None = None,
    progress: Callable[[str, int, int], None] | None = None,
    sampling_fraction: float | None = None,
    sample_weights: str | None = None,
) -> Report:
    """The HTML report of ``release`` against ``original`` (its sections:
    :mod:`sbc_sql.quality.report_render`), written to ``output`` when given (an existing
    file only with ``replace``).

    ``curve_k``: the k of the NCP-against-k curve (None or empty: no curve). A database
    file is only read, opened read-only (it may be one the user cannot write, or one another
    process reads): the curve re-clusters the original in an in-memory database that reads
    the file (see :func:`sbc_sql.quality.report_figures.scratch_for`); nothing is kept.
    ``sensitive``: the column of the diversity figures (default: the first sensitive column
    the release declares). ``log`` receives a line per step, ``progress(step, done,
    total)`` the long steps' progress (the coverage step, the curve's k).
    ``sampling_fraction`` or ``sample_weights`` adds the risk in the population before and
    after (:mod:`sbc_sql.quality.population`).
    """
    say = log or (lambda _: None)
    b = population_keys.basis(sampling_fraction, sample_weights)
    ks = [int(k) for k in (curve_k or ())]
    bad = [k for k in ks if k < 2]
    if bad:
        raise InputError(
            f"curve_k holds {bad[0]}, below 2; give k values of 2 or more, e.g. curve_k=[2, 5, 10]"
        )
    path = check_path(output, replace=replace, protected=[database]) if output is not None else None
    engine = engines.connect(database, read_only=True)
    try:
        files = [engines.parse_attach(a) for a in attach]
        for file, name in files:
            engine.attach(file, name)
        # a file opened here is written by nothing: the curve's trials go to a scratch engine
        scratch = scratch_for(database, engine, files)
        found = Report(**vars(measure(engine, original, release, ks, sensitive, say, scratch, progress, b)))
    finally:
        if engine is not database:  # an engine given is left open; a connection given stays open
            engine.close()
    found.html = render_page(found)
    if path is not None:
        found.path = write_atomically(path, found.html)
    return found
