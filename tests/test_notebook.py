"""sbc-sql in a notebook: the data as a DataFrame wherever a table is read, a closed result
that says so in one line, and warnings in the caller's keywords, not the command line's
flags."""

from __future__ import annotations

import duckdb
import numpy as np
import pandas as pd
import pytest

import sbc_sql
from sbc_sql.errors import InputError


def people(n: int = 200) -> pd.DataFrame:
    rng = np.random.default_rng(9)
    return pd.DataFrame(
        {
            "pid": np.arange(n),
            "age": rng.integers(20, 80, n),
            "zip": rng.choice(np.array(["1001", "1002", "1003"]), n),
            "dx": rng.choice(np.array(["flu", "cold", "gout"]), n),
        }
    )


def test_profile_takes_a_dataframe_as_anonymize_does() -> None:
    df = people().drop(columns="pid")
    got = sbc_sql.profile(df, qi="age,zip", sensitive="dx")
    assert (got.table, got.n_rows, got.qis) == ("data", len(df), ("age", "zip"))
    # the same as the table in a database
    import duckdb

    con = duckdb.connect()
    con.register("frame", df)
    con.execute("CREATE TABLE data AS SELECT * FROM frame")
    same = sbc_sql.profile(con, "data", qi="age,zip", sensitive="dx").as_dict()
    assert {k: v for k, v in got.as_dict().items() if k != "seconds"} == {
        k: v for k, v in same.items() if k != "seconds"
    }


def test_a_closed_result_says_so_in_one_line() -> None:
    df = people().drop(columns="pid")
    with sbc_sql.anonymize(df, k=5, qi="age,zip", sensitive="dx") as result:
        inside = result.to_pandas()
    assert len(inside) == len(df)
    with pytest.raises(
        InputError, match=r"^the result of 'data_k5' is closed .*read the release before closing"
    ):
        result.to_pandas()


def test_a_result_over_a_callers_connection_stays_readable() -> None:
    import duckdb

    con = duckdb.connect()
    con.register("frame", people().drop(columns="pid"))
    con.execute("CREATE TABLE t AS SELECT * FROM frame")
    with sbc_sql.anonymize(con, "t", 5, qi="age,zip", sensitive="dx") as result:
        pass
    assert len(result.to_pandas()) == 200


def test_an_engine_passed_in_outlives_the_results_with_block(tmp_path) -> None:
    """An engine the caller made (engines.connect, SparkEngine.connect) is the caller's to
    close: leaving a Result's block keeps it open for the calls that follow."""
    from sbc_sql import engines

    path = tmp_path / "t.duckdb"
    with duckdb.connect(str(path)) as con:
        con.register("frame", people().drop(columns="pid"))
        con.execute("CREATE TABLE t AS SELECT * FROM frame")
    engine = engines.connect(str(path))
    with sbc_sql.anonymize(engine, "t", 5, qi="age,zip", sensitive="dx") as result:
        pass
    assert sbc_sql.verify(engine, "t", "t_k5", 5).ok
    assert len(result.to_pandas()) == 200
    engine.close()


def test_warnings_name_keywords_not_flags() -> None:
    with pytest.warns(UserWarning, match="is distinct on") as caught:
        sbc_sql.anonymize(people(), k=5, qi="age,zip", sensitive="dx", keep="pid").close()
    (said,) = [str(w.message) for w in caught if "is distinct on" in str(w.message)]
    assert "(keep=...)" in said and "declare it with drop=..." in said
    assert "--" not in said
