"""Local files a run writes (--out-file, --target-db, --report): their formats, and that none of
them replaces an input.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable
from pathlib import Path

from ..errors import InputError, OutputExistsError


def check_target_db(target: str | Path, *, protected: Iterable[str | Path]) -> Path:
    """The release's own database file: never one of the ``protected`` files (the source
    database, the input file), and in a folder that exists and can be written."""
    path = Path(target)
    for other in protected:
        if same_file(path, Path(other)):
            raise InputError(f"--target-db '{path}' is '{other}', which the run reads; give another file")
    return check_writable_path(path, "--target-db")


def same_file(path: Path, other: Path) -> bool:
    """The two paths name one file (or would, once it exists)."""
    return path.resolve() == other.resolve() or (
        path.exists() and other.exists() and os.path.samefile(path, other)
    )


def target_alias(target: Path, source: str) -> str:
    """The name the release's database is attached under: its file's stem as a plain name,
    unless that is the source database's name."""
    stem = re.sub(r"\W", "_", target.stem) or "release"
    stem = stem if not stem[0].isdigit() else f"db_{stem}"
    return stem if stem.lower() != source.lower() else f"{stem}_release"


#: the export's format by the file's ending: Parquet keeps value sets as lists; CSV holds the
#: readable text view ('25-40', 'F|M'); JSON an array of objects, NDJSON one object a line
EXPORT_FORMATS = {
    ".parquet": "parquet",
    ".pq": "parquet",
    ".csv": "csv",
    ".json": "json",
    ".ndjson": "ndjson",
    ".jsonl": "ndjson",
}


def export_format(path: str | Path) -> str:
    """'parquet', 'csv', 'json' or 'ndjson' by the file's ending; anything else an InputError."""
    suffix = Path(path).suffix.lower()
    if suffix not in EXPORT_FORMATS:
        raise InputError(
            f"--out-file '{path}' ends in '{suffix or '(nothing)'}'; give a file ending in "
            f"{', '.join(EXPORT_FORMATS)} (the ending picks the format)"
        )
    return EXPORT_FORMATS[suffix]


def check_writable_path(path: str | Path, flag: str) -> Path:
    """An output file's path, checked before any work: a file (not a folder) in a folder that
    exists and this user can write. ``flag`` names the option in the message."""
    path = Path(path)
    if path.is_dir():
        raise InputError(f"{flag} '{path}' is a folder; give a file path in it")
    folder = path.parent
    if not folder.is_dir():
        raise InputError(
            f"{flag} '{path}': the folder '{folder}' does not exist; create it or give a "
            "path in an existing one"
        )
    if not os.access(folder, os.W_OK | os.X_OK):
        raise InputError(
            f"{flag} '{path}': the folder '{folder}' is not writable for you; give a path in "
            "a folder you can write"
        )
    return path


def check_out_file(out_file: str | Path, *, protected: Iterable[str | Path], replace: bool) -> Path:
    """The export's path, once it is known to replace nothing it must not: never one of the
    ``protected`` files (the database's files, the input file), and an existing file only
    under ``--replace``; and in a folder that exists and can be written
    (:func:`check_writable_path`), so that a run never fails after its work for the want of
    one."""
    path = Path(out_file)
    export_format(path)
    for other in protected:
        kept = Path(other)
        if same_file(path, kept):
            raise InputError(
                f"--out-file '{path}' is '{kept}', which the run reads or writes; choose another --out-file"
            )
    if path.is_dir():
        raise InputError(
            f"--out-file '{path}' is a folder; give a file path ending in .parquet, .csv or .json"
        )
    if path.exists() and not replace:
        raise OutputExistsError(
            f"--out-file '{path}' already exists; pass --replace to overwrite it or choose another --out-file"
        )
    return check_writable_path(path, "--out-file")
