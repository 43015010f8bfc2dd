"""Every registered criterion (sbc_sql/privacy/registry.py) on every surface, asked by its
own options alone: the Python keywords on every engine, the command line's flags
(anonymize, verify, evaluate, compare, suggest-k) and the SQL functions' arguments
(tests/test_plpython.py). It is kept while clustering, said in the summary, verified by
``verify`` and measured by ``evaluate``; a criterion registered tomorrow is tested here
without a line of this file changing.

The values asked are each option's example (its default where it has none), on a table
whose sensitive column every registered criterion can hold on at k = 5.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import duckdb
import numpy as np
import pandas as pd
import pytest

import sbc_sql
from sbc_sql import documents
from sbc_sql.privacy import registry
from sbc_sql.privacy.registry import Registered

K = 5
ROLES = {"qi": "age,zip", "sensitive": "dx"}
CRITERIA = [pytest.param(c, id=c.where.split(":")[0]) for c in registry.CRITERIA]


def table() -> pd.DataFrame:
    """300 rows: two QIs and a sensitive dx of six values, none of them dominant."""
    rng = np.random.default_rng(11)
    n = 300
    return pd.DataFrame(
        {
            "age": rng.integers(20, 80, n),
            "zip": rng.choice(np.array(["1001", "1002", "1003", "2001"]), n),
            "dx": rng.choice(np.array(["flu", "cold", "asthma", "gout", "ulcer", "angina"]), n),
        }
    )


def asking(registered: Registered) -> dict[str, Any]:
    """The keywords that ask the criterion: each option's example, or its default."""
    return {o.name: o.type(o.example) if o.example else o.default for o in registered.options}


def flags(values: dict[str, Any]) -> list[str]:
    """The same as command-line flags (a false switch left out)."""
    out: list[str] = []
    for option in (o for o in registry.options() if o.name in values):
        value = values[option.name]
        if option.type is bool:
            out += [option.flag] if value else []
        else:
            out += [option.flag, str(value)]
    return out


@pytest.mark.parametrize("registered", CRITERIA)
def test_every_criterion_is_kept_said_and_verified_on_every_engine(engine, registered: Registered) -> None:
    database = engine.frame(table())
    values = asking(registered)
    criterion = registered.load().from_options(values)
    assert criterion is not None, values
    with sbc_sql.anonymize(database, "t", K, output="r", **ROLES, **values) as result:
        assert result.verdict.ok, result.verdict.problems
        said = documents.summary_dict(result)["criteria"]
        assert said["asked"] == criterion.summary()
        assert said["achieved"], "the release's figure of the criterion"
    assert sbc_sql.verify(database, "t", "r", K, **values).ok
    # the keywords are the registry's: a misspelt one is Python's TypeError, not ignored
    with pytest.raises(TypeError, match="unexpected keyword"):
        sbc_sql.verify(database, "t", "r", K, **{name + "x": v for name, v in values.items()})


@pytest.fixture(scope="module")
def database(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("criteria") / "clinic.duckdb"
    with duckdb.connect(str(path)) as con:
        con.register("df", table())
        con.execute("CREATE TABLE t AS SELECT * FROM df")
    return path


@pytest.mark.parametrize("registered", CRITERIA)
def test_every_criterion_from_the_command_line(database: Path, cli, registered: Registered) -> None:
    values = asking(registered)
    kind = registered.load()
    criterion = kind.from_options(values)
    assert criterion is not None
    db = ["--db", str(database)]
    release = f"t_{registered.where.split(':')[0]}"
    made = cli(
        ["anonymize", *db, "-t", "t", "-k", str(K), "--qi", "age,zip", "--sensitive", "dx"]
        + ["--output", release, "--replace", "--json", *flags(values)]
    )
    assert made.exit_code == 0, made.stderr
    assert json.loads(made.stdout)["criteria"]["asked"] == criterion.summary()

    checked = cli(["verify", *db, "--original", "t", "--release", release, "-k", str(K), *flags(values)])
    assert checked.exit_code == 0, checked.stdout + checked.stderr
    assert criterion.describe() in checked.stdout

    evaluated = cli(
        ["evaluate", *db, "--original", "t", "--release", release, "--sensitive", "dx"]
        + ["--queries", "0", "--json"]
    )
    assert evaluated.exit_code == 0, evaluated.stderr
    figures = json.loads(evaluated.stdout)["attribute_disclosure"]
    assert {f.key for f in registered.figures} <= set(figures)

    compared = cli(
        ["compare", *db, "-t", "t", "-k", str(K), "--algorithms", "sbca", "--qi", "age,zip"]
        + ["--sensitive", "dx", "--json", *flags(values)]
    )
    assert compared.exit_code == 0, compared.stderr
    (row,) = json.loads(compared.stdout)["rows"]
    assert (row["algorithm"], row["k"]) == ("sbca", K) and 0 < row["ncp"] < 1, row

    suggested = cli(
        ["suggest-k", *db, "-t", "t", "--qi", "age,zip", "--sensitive", "dx"]
        + ["--max-loss", "0.5", "--k-max", "8", "--json", *flags(values)]
    )
    assert suggested.exit_code == 0, suggested.stderr
