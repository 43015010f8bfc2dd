"""Releases pinned byte for byte: a refactoring that changes a class, a range, a set or the
row order of any algorithm's release on a seeded table fails here.

Each case anonymizes a seeded synthetic table (the benchmarks' generator) and hashes the
release's three objects: the row table, the class table and the text view, every column
name, type and value in stored order. To re-pin after an intended change, run this file
with ``SBC_SQL_PRINT_PINS=1`` and copy the printed digests.
"""

from __future__ import annotations

import hashlib
import os

import duckdb
import pytest
from helpers import load_example, q

import sbc_sql

ROWS = 6000  # four blocks of the default at k = 5

# (algorithm, k, mode) -> sha256 of the release
PINS = {
    ("sbca", 5, "auto"): "90cee9e27ce2a351a86b2f8e1287cea3623cbb322b404784a74b390602750839",
    ("sbca", 10, "exact"): "c57340e457200790f77dc62151cf003e86d527fcec7ecf4919cd095862ba6c5c",
    ("sbca-paper", 5, "exact"): "5442fe9821182150289311628e984e80af542d525c76b5617aa0d45da1fd3404",
    ("sbca-paper", 5, "blocks"): "b07d999c3dd8c398cab31dfb1b41e63f6f2f14a009fb73a1f477f1b0a49cf056",
    ("mondrian", 10, "auto"): "9e20b2560bc094a7a00e14cde076d32b8204509692f121333fa8b4e80c7bb633",
    ("kmember", 10, "auto"): "a01659d6a55b16941e7e1f498d5b9e0f1d1a49aa290ff4009db9fbf2ddffcd26",
}


@pytest.fixture(scope="module")
def seeded() -> duckdb.DuckDBPyConnection:
    datasets = load_example("benchmarks/datasets.py")
    con = duckdb.connect()
    datasets.make_synthetic(con, "people", ROWS, seed=11)
    yield con
    con.close()


def digest(con: duckdb.DuckDBPyConnection, names: list[str]) -> str:
    h = hashlib.sha256()
    for name in names:
        cur = con.execute(f"SELECT * FROM {q(name)}")
        h.update(repr([(d[0], str(d[1])) for d in cur.description]).encode())
        for row in cur.fetchall():
            h.update(repr(row).encode())
    return h.hexdigest()


@pytest.mark.slow
@pytest.mark.parametrize(("algorithm", "k", "mode"), list(PINS))
def test_release_is_byte_identical(seeded, algorithm: str, k: int, mode: str) -> None:
    output = f"pin_{algorithm.replace('-', '_')}_{mode}_k{k}"
    result = sbc_sql.anonymize(seeded, "people", k, algorithm=algorithm, mode=mode, output=output, workers=2)
    got = digest(seeded, [result.plan.rows_table, result.plan.classes_table, result.view])
    if os.environ.get("SBC_SQL_PRINT_PINS"):
        print(f'\n    ("{algorithm}", {k}, "{mode}"): "{got}",')
    assert got == PINS[(algorithm, k, mode)]
