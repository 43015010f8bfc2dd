"""PostgreSQL URLs as ``--db`` gives them: telling one from a DuckDB file, and showing one
without its password. Apart from the PostgreSQL engine, which loads its own sqlglot dialect
and driver code, so that a DuckDB run never loads them to ask."""

from __future__ import annotations

import urllib.parse

URL_SCHEMES = ("postgresql://", "postgres://")


def looks_like_url(database: object) -> bool:
    return isinstance(database, str) and database.startswith(URL_SCHEMES)


def shown_url(url: str) -> str:
    """The URL without its password, for messages."""
    parts = urllib.parse.urlsplit(url)
    if parts.password is None:
        return url
    host = parts.hostname or ""
    user = f"{parts.username}@" if parts.username else ""
    port = f":{parts.port}" if parts.port else ""
    return urllib.parse.urlunsplit(parts._replace(netloc=f"{user}{host}{port}"))
