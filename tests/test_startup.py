"""Start-up: the command line answers --help and --version without loading DuckDB, Arrow,
numpy, sqlglot or the kernels, and a run loads only what it runs.

Each check runs a fresh interpreter under ``-X importtime``, whose report on stderr names
every module the process imported; the option declarations' names come from
sbc_sql.choices, held here equal to the modules that implement them.
"""

from __future__ import annotations

import enum
import json
import subprocess
import sys
from pathlib import Path

import pytest
from helpers import checkout_env, load_example, run_cli

import sbc_sql
from sbc_sql import choices
from sbc_sql.cluster import leftover, registry

#: what neither --help nor --version needs (rich and pydantic: typer's, for its own
#: formatting and coercion, which the command line does without)
DATA_STACK = (
    "pyarrow",
    "duckdb",
    "numpy",
    "sqlglot",
    "numba",
    "llvmlite",
    "pandas",
    "scipy",
    "rich",
    "pydantic",
)
#: what no anonymize run on DuckDB needs
NEVER_IN_A_RUN = (
    *("pandas", "rich", "pydantic", "sklearn", "jsonschema", "scipy", "matplotlib", "jinja2"),
    *("pyspark", "adbc_driver_manager", "adbc_driver_postgresql"),
)


def fresh(args: list[str], cwd: Path | None = None, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    """``python ARGS`` in a fresh interpreter running this checkout's package."""
    return subprocess.run(
        [sys.executable, *args],
        cwd=cwd,
        env=checkout_env(),
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )


def imported(args: list[str], cwd: Path | None = None) -> tuple[subprocess.CompletedProcess[str], set[str]]:
    """``python -X importtime -m sbc_sql ARGS`` and the top-level packages it imported."""
    res = fresh(["-X", "importtime", "-m", "sbc_sql", *args], cwd=cwd, timeout=120)
    names = {
        line.rsplit("|", 1)[1].strip().split(".")[0]
        for line in res.stderr.splitlines()
        if line.startswith("import time:") and "|" in line
    }
    return res, names


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (["--version"], f"sbc-sql {sbc_sql.__version__}\n"),
        (["--help"], "k-anonymize tables in DuckDB, PostgreSQL or Apache Spark with"),
        (["-h"], "Exit codes: 0 success"),
        (["anonymize", "--help"], "Write a verified k-anonymous release of TABLE"),
        (["verify", "--help"], "--l-model"),
        (["suggest-k", "--help"], "--criticality"),
    ],
)
def test_help_and_version_load_none_of_the_data_stack(args, says):
    res, names = imported(args)
    assert res.returncode == 0, res.stderr
    if args == ["--version"]:
        assert res.stdout == says
    else:  # the help, its lines joined
        assert says in " ".join(res.stdout.split())
    assert "sbc_sql" in names
    assert not names & set(DATA_STACK), sorted(names & set(DATA_STACK))


def test_importing_the_command_line_loads_none_of_it():
    probe = (
        "import sys, sbc_sql.cli\n"
        f"print(sorted(m for m in sys.modules if m.split('.')[0] in {DATA_STACK!r}))\n"
    )
    res = fresh(["-c", probe])
    assert res.returncode == 0, res.stderr
    assert res.stdout.strip() == "[]"


def kernels_of_the_checkout() -> str:
    """Which kernels a fresh interpreter run as :func:`imported` runs them uses."""
    res = fresh(["-c", "from sbc_sql.cluster.sbca_plus import compiled; print(compiled.engine())"])
    assert res.returncode == 0, res.stderr
    return res.stdout.strip()


def test_an_anonymize_run_loads_only_what_it_runs(tmp_path):
    clinic = load_example("examples/make_clinic_db.py")
    db = clinic.make_clinic_db(tmp_path / "clinic.duckdb", 300, 7)
    res, names = imported(["anonymize", "--db", db, "-t", "patients", "-k", "5", "-q"], cwd=tmp_path)
    assert res.returncode == 0, res.stderr
    assert "verified 5-anonymous" in res.stdout
    never = set(NEVER_IN_A_RUN)
    compiled_kernels = kernels_of_the_checkout() == "ahead-of-time"
    if not compiled_kernels:
        # no kernels compiled beside this checkout (an install that is not editable puts them
        # in site-packages): numba's JIT runs them, and importing numba imports scipy itself
        never.discard("scipy")
    assert not names & never, sorted(names & never)
    if compiled_kernels:  # the kernels compiled at install need no numba
        assert "numba" not in names and "llvmlite" not in names


def test_the_plain_coercion_is_typers():
    """Where the command line coerces an option's value without typer (cli._Coercion), typer
    would give the same value, of the same type; a value typer refuses is left to typer."""
    coercion = pytest.importorskip("typer._coercion")
    import typer.main

    from sbc_sql import cli

    group = typer.main.get_command(cli.app)
    plain = [None, "", "0", "7", "-3", "010", "0.05", "-2.5", "2.", ".5", "1e3", " 5", "abc", "1_000"]
    typed = [5, 0.5, 2.0, True, 10**20]
    answered = 0
    for command in [group, *group.commands.values()]:  # type: ignore[attr-defined]
        ctx = typer.Context(command)
        for param in command.get_params(ctx):
            descriptor = getattr(param, "type_descriptor", None)
            if descriptor is None:
                continue
            kind = descriptor.annotation
            members = list(kind) if isinstance(kind, type) and issubclass(kind, enum.Enum) else []
            values = [
                *plain,
                *typed,
                *members,
                *(m.value for m in members),
                *(m.value.upper() for m in members),
            ]
            if param.multiple:
                values = [None, (), *((v,) for v in values if v is not None), ("1", "2.5"), ("a", 3)]
            typers = coercion.build_runtime_param(descriptor)
            for value in values:
                quick = cli._Coercion(param).quick(value, ctx)
                if quick is cli._TYPERS:
                    continue
                answered += 1
                expected = typers.coerce(value, param=param, ctx=ctx)  # never raises where quick answered
                assert quick == expected, (command.name, param.name, value)
                assert type(quick) is type(expected), (command.name, param.name, value)
                if isinstance(quick, list):
                    assert [type(v) for v in quick] == [type(v) for v in expected]
    assert answered > 500


def test_the_algorithm_choices_are_the_registrys():
    assert {c.name: c.description for c in registry.CLUSTERERS} == choices.ALGORITHMS
    assert list(choices.ALGORITHMS) == list(registry.names())
    assert registry.DEFAULT == choices.DEFAULT_ALGORITHM == registry.names()[0]
    assert registry.choices_help().startswith(f"sbca (default: {registry.get('sbca').description}), ")


def test_every_other_choice_is_its_homes():
    """The modules that implement a choice read its names from sbc_sql.choices: one list."""
    from sbc_sql import engines, plan, warehouse
    from sbc_sql.privacy import l_diversity
    from sbc_sql.quality import model, suggest

    assert engines.ENGINES is choices.ENGINES
    assert plan.MODES is choices.MODES
    assert leftover.LEFTOVER_MODES is choices.LEFTOVER_MODES
    assert l_diversity.VARIANTS is choices.L_VARIANTS
    assert warehouse.DIALECTS is choices.DIALECTS
    assert model.CLASSIFIERS is choices.CLASSIFIERS
    assert (suggest.DOMAIN, suggest.PURPOSE, suggest.CRITICALITY) == (
        choices.DOMAIN,
        choices.PURPOSE,
        choices.CRITICALITY,
    )


#: every module that computes with Arrow's compute functions, and what a run imports to
#: reach them: none of them loads pyarrow.compute (about 25 ms) before it computes
COMPUTING = (
    "sbc_sql.arrays",
    "sbc_sql.cluster.decode",
    "sbc_sql.stages.stats",
    "sbc_sql.stages.pull",
    "sbc_sql.engines",
    "sbc_sql.engines.duckdb",
    "sbc_sql.engines.files",
    "sbc_sql.knowledge",
    "sbc_sql.run",
    "sbc_sql.quality.model",
    "sbc_sql.quality.queries",
    "sbc_sql.quality.evaluate",
)


def test_arrow_compute_loads_where_a_module_computes_not_where_it_is_imported():
    probe = (
        "import importlib, sys\n"
        f"for name in {COMPUTING!r}:\n"
        "    importlib.import_module(name)\n"
        "print('pyarrow' in sys.modules, 'pyarrow.compute' in sys.modules)\n"
    )
    res = fresh(["-c", probe])
    assert res.returncode == 0, res.stderr
    assert res.stdout.split() == ["True", "False"]


#: a whole command in a fresh interpreter, through the entry point, then what the garbage
#: collector was left with: the objects frozen, and whether it still runs
FROZEN_PROBE = """
import atexit, gc, sys
from sbc_sql.__main__ import main
sys.argv = ["sbc-sql", *sys.argv[1:]]
atexit.register(lambda: print(gc.get_freeze_count(), gc.isenabled(), file=sys.stderr))
main()
"""


def test_the_command_freezes_what_it_loaded_and_still_collects(tmp_path):
    clinic = load_example("examples/make_clinic_db.py")
    db = clinic.make_clinic_db(tmp_path / "clinic.duckdb", 300, 7)
    command = ["anonymize", "--db", str(db), "-t", "patients", "-k", "5", "-q"]
    res = fresh(["-c", FROZEN_PROBE, *command], cwd=tmp_path, timeout=120)
    assert res.returncode == 0, res.stderr
    assert "verified 5-anonymous" in res.stdout
    frozen, enabled = res.stderr.split()[-2:]
    # DuckDB's, Arrow's, numpy's and sqlglot's objects: tens of thousands
    assert int(frozen) > 20_000, frozen
    assert enabled == "True"


def test_the_app_in_another_process_freezes_nothing(tmp_path):
    import gc

    clinic = load_example("examples/make_clinic_db.py")
    db = clinic.make_clinic_db(tmp_path / "clinic.duckdb", 300, 7)
    before = gc.get_freeze_count()
    res = run_cli(["anonymize", "--db", db, "-t", "patients", "-k", "5", "-q"])
    assert res.exit_code == 0, res.stderr
    assert gc.get_freeze_count() == before
    assert gc.isenabled()


#: the engines imported inside loading() in the command's own process (a fresh interpreter):
#: how many passes the collector made meanwhile, then what it was left with
LOADING_PROBE = """
import gc, sys
from sbc_sql.cli import app
app_module = sys.modules["sbc_sql.cli.app"]
passes = []
gc.callbacks.append(lambda phase, info: passes.append(info["generation"]) if phase == "start" else None)
app_module.own_process()
with app_module.loading():
    import sbc_sql.engines
inside = len(passes)
print(inside, gc.get_freeze_count() > 20_000, gc.isenabled())
"""


def test_what_a_command_loads_loads_with_the_collector_off():
    res = fresh(["-c", LOADING_PROBE])
    assert res.returncode == 0, res.stderr
    assert res.stdout.split() == ["0", "True", "True"]


#: a command through the entry point beside a thread still running and an exit function
EXIT_PROBE = """
import atexit, sys, threading, time
from sbc_sql.__main__ import main
sys.argv = ["sbc-sql", *sys.argv[1:]]
def late():
    time.sleep(0.5)
    print("thread ended", flush=True)
threading.Thread(target=late).start()
atexit.register(lambda: print("exit function ran"))
main()
"""


@pytest.mark.parametrize(("table", "code"), [("patients", 0), ("nope", 1)])
def test_the_process_ends_as_at_exit_without_the_teardown(tmp_path, table, code):
    # the command's process, which leaves without the interpreter's teardown, still waits
    # for its threads and runs its exit functions, keeps its code and output, and leaves
    # its database closed (no write-ahead log beside it)
    clinic = load_example("examples/make_clinic_db.py")
    db = clinic.make_clinic_db(tmp_path / "clinic.duckdb", 300, 7)
    command = ["anonymize", "--db", str(db), "-t", table, "-k", "5", "--replace", "--json"]
    res = fresh(["-c", EXIT_PROBE, *command], cwd=tmp_path, timeout=120)
    assert res.returncode == code, res.stderr
    lines = res.stdout.splitlines()
    assert lines[-1] == "exit function ran", res.stdout
    assert "thread ended" in lines
    document = json.loads(
        "\n".join(line for line in lines if line not in ("thread ended", "exit function ran"))
    )
    assert document["ok"] is (code == 0)
    assert not list(tmp_path.glob("*.wal"))
