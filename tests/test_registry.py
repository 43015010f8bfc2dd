"""The clustering step as the pipeline runs it: the registry of algorithms, modes and workers."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import duckdb
import numpy as np
import pytest
from helpers import checkout_env

from sbc_sql.cluster import blocks, registry
from sbc_sql.cluster.model import SUPPRESSED, QIData
from sbc_sql.cluster.ncp import total_ncp
from sbc_sql.cluster.sbca_paper import sbca
from sbc_sql.cluster.sbca_plus.algorithm import sbca_plus


def population(n: int, seed: int = 3) -> QIData:
    """Two numerics (one with NULLs) and three skewed categoricals."""
    rng = np.random.default_rng(seed)
    age = rng.integers(0, 90, n).astype(np.float64)
    age[rng.random(n) < 0.02] = np.nan
    income = np.round(age * 900 + rng.normal(0, 5000, n))
    cards = (2, 9, 60)
    cats = [np.minimum(rng.zipf(1.6, n) - 1, c - 1).astype(np.int32) for c in cards]
    cols = (age, income, *cats)
    lo = (np.nanmin(age), np.nanmin(income), np.nan, np.nan, np.nan)
    hi = (np.nanmax(age), np.nanmax(income), np.nan, np.nan, np.nan)
    return QIData(
        ("age", "income", "sex", "region", "zip"),
        (True, True, False, False, False),
        cols,
        lo,
        hi,
        (0, 0, *cards),
        (1.0,) * 5,
    )


def assert_k_anonymous_and_complete(labels: np.ndarray, n: int, k: int) -> None:
    assert len(labels) == n
    kept = labels[labels != SUPPRESSED]
    assert len(kept) == n
    assert np.bincount(kept).min() >= k


@pytest.mark.parametrize("algorithm", ["sbca", "sbca-paper"])
@pytest.mark.parametrize("k", [3, 10])
def test_block_mode_is_k_anonymous_and_complete(algorithm, k):
    data = population(9000)
    run = registry.run_clustering(data, k, algorithm=algorithm, mode="blocks", workers=2)
    assert run.mode == "blocks"
    assert_k_anonymous_and_complete(run.labels, data.n_rows, k)


@pytest.mark.parametrize("algorithm", ["sbca", "sbca-paper"])
def test_block_mode_same_labels_for_any_worker_count(algorithm):
    data = population(7000, seed=5)
    one = registry.run_clustering(data, 5, algorithm=algorithm, mode="blocks", workers=1)
    two = registry.run_clustering(data, 5, algorithm=algorithm, mode="blocks", workers=2)
    np.testing.assert_array_equal(one.labels, two.labels)


def test_one_block_is_the_exact_run():
    data = population(1500, seed=8)
    whole = blocks.blocked(
        data, 6, registry.block_algorithm(6), block_size=data.n_rows, categorical_by="sort"
    )
    pool = -(-blocks.BLOCK_POOL_ROWS // 6)
    np.testing.assert_array_equal(whole, sbca_plus(data, 6, passes=blocks.BLOCK_PASSES, pool=pool))
    # and the default's auto mode on a table of one block is that run
    np.testing.assert_array_equal(registry.run_clustering(data, 6).labels, whole)


def test_paper_preset_is_the_paper_algorithm():
    data = population(1200, seed=9)
    run = registry.run_clustering(data, 4, algorithm="sbca-paper", mode="exact")
    np.testing.assert_array_equal(run.labels, sbca(data, 4))


def test_default_beats_the_paper_on_information_loss():
    data = population(3000, seed=11)
    plus = registry.run_clustering(data, 10, mode="exact").labels
    paper = registry.run_clustering(data, 10, algorithm="sbca-paper", mode="exact").labels
    assert total_ncp(data, plus) < total_ncp(data, paper)


def test_auto_mode_switches_to_blocks_above_the_threshold():
    assert blocks.choose_mode(1000, 10) == "exact"
    assert blocks.choose_mode(2_000_000, 10) == "blocks"
    small = registry.run_clustering(population(800), 5, algorithm="sbca-paper")
    assert small.mode == "exact"
    # the default always runs in blocks; a small table is one block
    default = registry.run_clustering(population(800), 5)
    assert default.mode == "blocks" and "in 1 block(s)" in default.detail


def test_a_run_that_cannot_fit_in_memory_is_refused(monkeypatch):
    from sbc_sql.errors import ResourceError

    monkeypatch.setattr(blocks, "available_memory", lambda: 1024)
    with pytest.raises(ResourceError, match="GiB is available"):
        registry.run_clustering(population(500), 5)


def test_chosen_block_rows_cut_larger_blocks_each_row_a_candidate():
    data = population(6000, seed=12)
    run = registry.run_clustering(data, 5, block_rows=3000, workers=2)
    assert "2 block(s) of at most 3,000 rows" in run.detail
    assert_k_anonymous_and_complete(run.labels, data.n_rows, 5)
    again = registry.run_clustering(data, 5, block_rows=3000, workers=1)
    np.testing.assert_array_equal(run.labels, again.labels)
    # one block of the whole table: every row a candidate for every class
    whole = registry.run_clustering(data, 5, block_rows=6000)
    every = sbca_plus(data, 5, passes=blocks.BLOCK_PASSES, pool=1200, wide=1200)
    np.testing.assert_array_equal(whole.labels, every)
    default = registry.run_clustering(data, 5)
    assert total_ncp(data, whole.labels) < total_ncp(data, default.labels)


# ---------------------------------------------------------------------------------------
# the registry: one table read by the CLI, the plan, compare and docs/options.md


def small_table(con, rows: int = 60) -> None:
    con.execute(
        f"CREATE TABLE t AS SELECT 20 + i % 47 AS age, 'c' || (i % 5) AS city, "
        f"'z' || (i * 13 % 17) AS zip, 'd' || (i % 3) AS diagnosis FROM range({rows}) r(i)"
    )
    con.execute("COMMENT ON COLUMN t.diagnosis IS 'sbc:sensitive'")


@pytest.mark.parametrize("name", registry.names())
def test_every_registered_algorithm_runs_and_verifies(con, name):
    from sbc_sql import anonymize, verify
    from sbc_sql.errors import InputError

    small_table(con)
    if registry.get(name).requires == ("beta",):
        # it cannot run on k alone: one error naming the criterion it needs
        with pytest.raises(
            InputError, match="^" + re.escape(f"algorithm=... {name} needs beta_likeness=...")
        ):
            anonymize(con, "t", 4, algorithm=name)
        return
    result = anonymize(con, "t", 4, algorithm=name)
    assert result.verdict is not None and result.verdict.ok, result.verdict
    assert result.mode in registry.get(name).modes
    assert verify(con, "t", result.release, 4).ok


def test_the_table_names_each_algorithm_once_and_describes_it():
    assert registry.names()[0] == registry.DEFAULT
    assert len(set(registry.names())) == len(registry.CLUSTERERS)
    for c in registry.CLUSTERERS:
        assert c.description and "\n" not in c.description
        assert set(c.modes) <= {"exact", "blocks", "streamed"} and "exact" in c.modes
    help_text = registry.choices_help()
    assert all(name in help_text for name in registry.names())


def test_unknown_algorithm_is_one_error_line_naming_the_choices(con, cli, tmp_path):
    from sbc_sql import anonymize
    from sbc_sql.errors import InputError

    choices = ", ".join(registry.names())
    with pytest.raises(InputError, match=f"is not one of {choices}$"):
        registry.get("sbca-x")
    small_table(con)
    with pytest.raises(InputError, match=f"algorithm='nope' is not one of {choices}$"):
        anonymize(con, "t", 4, algorithm="nope")
    path = tmp_path / "t.duckdb"
    small_table(duckdb.connect(str(path)))
    res = cli(["anonymize", "--db", path, "--table", "t", "--k", "4", "--algorithm", "nope"])
    assert res.exit_code == 2  # a choice: a usage error naming them
    assert "'nope' is not one of 'sbca', 'sbca-paper', 'mondrian'" in " ".join(res.stderr.split())
    res = cli(["compare", "--db", path, "--table", "t", "--k", "4", "--algorithms", "sbca,nope"])
    assert res.exit_code == 1
    assert res.stderr.strip().splitlines()[-1] == f"Error: --algorithm 'nope' is not one of {choices}"


def test_compare_runs_every_registered_algorithm_by_default(con):
    from sbc_sql.compare import compare

    small_table(con)
    rows = compare(con, "t", [4])
    assert [r.algorithm for r in rows] == list(registry.runnable())
    # only the algorithms that need a criterion are left out
    assert [c.name for c in registry.CLUSTERERS if c.requires] == [
        n for n in registry.names() if n not in registry.runnable()
    ]


def test_the_option_table_lists_exactly_the_registered_algorithms():
    page = (Path(__file__).resolve().parents[1] / "docs" / "options.md").read_text(encoding="utf-8")
    (row,) = [line for line in page.splitlines() if line.startswith("| `--algorithm NAME` |")]
    listed = re.findall(r"`([a-z-]+)`", row.split("|")[2])
    assert listed == list(registry.names())


@pytest.mark.slow
def test_a_default_run_loads_no_other_algorithm():
    """The modules of the algorithms that bring numba (the paper's kernels, k-member) load
    only when chosen; with the kernels compiled at install the default needs no numba at
    all (tests/test_packaging.py checks the installed wheel)."""
    probe = (
        "import sys, duckdb, sbc_sql\n"
        "from sbc_sql.cluster.sbca_plus import compiled\n"
        "con = duckdb.connect()\n"
        "con.execute('CREATE TABLE t AS SELECT i % 70 AS age, \\'c\\' || (i % 5) AS city '\n"
        "            'FROM range(500) r(i)')\n"
        "assert sbc_sql.anonymize(con, 't', 5).verdict.ok\n"
        "others = ('baselines.kmember',)\n"
        "print(compiled.engine(), 'numba' in sys.modules)\n"
        "print([m for m in others if 'sbc_sql.cluster.' + m in sys.modules])\n"
    )
    env = {k: v for k, v in checkout_env().items() if k != "SBC_SQL_KERNELS"}
    res = subprocess.run(
        [sys.executable, "-c", probe], env=env, capture_output=True, text=True, timeout=120, check=False
    )
    assert res.returncode == 0, res.stderr
    engine_line, others = res.stdout.splitlines()
    assert others == "[]"
    engine, numba_loaded = engine_line.split()
    if engine == "ahead-of-time":
        assert numba_loaded == "False"


def test_compare_never_replaces_a_table_it_did_not_create(con):
    from sbc_sql.compare import compare
    from sbc_sql.errors import OutputExistsError

    con.execute("CREATE TABLE t AS SELECT i % 50 AS age, 'c' || (i % 4) AS city FROM range(200) r(i)")
    con.execute("CREATE TABLE t_mondrian_k4_rows AS SELECT 'mine' AS note")
    with pytest.raises(OutputExistsError, match="'t_mondrian_k4_rows'"):
        compare(con, "t", [4, 8], ["sbca", "mondrian"])
    assert con.execute("SELECT note FROM t_mondrian_k4_rows").fetchall() == [("mine",)]
    assert con.execute("SELECT count(*) FROM duckdb_tables()").fetchone() == (2,)
    # its own releases it drops as it goes, so a second comparison runs as the first did
    first = compare(con, "t", [4], ["sbca"])
    assert compare(con, "t", [4], ["sbca"])[0].ncp == first[0].ncp


def test_a_first_compile_is_announced_and_a_cached_one_is_not(monkeypatch, tmp_path):
    import shutil
    from pathlib import Path

    import sbc_sql.cluster.registry as reg

    folder = Path(reg.__file__).resolve().parent / "baselines" / "__pycache__"
    kept = tmp_path / "kept"
    moved = sorted(folder.glob("kmember.*.nbi")) if folder.exists() else []
    kept.mkdir()
    for f in moved:
        shutil.move(str(f), kept / f.name)
    try:
        assert reg.compiles_first("kmember")
    finally:
        for f in kept.iterdir():
            shutil.move(str(f), folder / f.name)
    folder.mkdir(exist_ok=True)
    marker = folder / "kmember._sbc_test-1.py311.nbi"
    marker.write_text("")
    try:
        assert not reg.compiles_first("kmember")
    finally:
        marker.unlink()
    assert not reg.compiles_first("mondrian")
    monkeypatch.setenv("NUMBA_CACHE_DIR", str(tmp_path))
    assert not reg.compiles_first("kmember")


def test_compare_says_a_first_compile_as_anonymize_does(monkeypatch, cli, tmp_path):
    """The seconds k-member's kernels take to compile on a first run are said, on stderr, by
    compare as by anonymize; once they are cached, compare prints its table alone."""
    import sbc_sql.cluster.registry as reg

    path = tmp_path / "t.duckdb"
    small_table(duckdb.connect(str(path)))
    notice = "compiling the clustering kernels (first run only: 20 to 30 s, cached afterwards)\n"
    args = ["--db", path, "--table", "t", "--k", "4"]
    for compiling in (True, False):
        monkeypatch.setattr(reg, "compiles_first", lambda algorithm, first=compiling: first)
        res = cli(["compare", *args, "--algorithms", "kmember"])
        assert res.exit_code == 0, res.stderr
        assert res.stderr == (notice if compiling else "")
        assert res.stdout.splitlines()[1].startswith("kmember")
        res = cli(["anonymize", *args, "-o", f"said_{compiling}", "--algorithm", "kmember"])
        assert res.exit_code == 0, res.stderr
        assert (notice in res.stderr) is compiling
