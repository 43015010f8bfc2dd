"""README's code runs as printed, and so does that of the reference pages in docs/: every
command of their fenced blocks (``sbc-sql ...`` and the ``python`` scripts that make its
inputs) and every ``python`` block, on the files README says how to make, each asserted to
exit 0.

The rules, so that a line of README or of a page is run the way a reader would run it:

- README's blocks run first, in its order, then each page's (``PAGES``) in the page's order;
  the quick start's block and the one after it (the Adult release) run first, in one folder,
  and make what the rest read; every later block starts from a copy of that folder, its
  lines in order, as a reader who followed the quick start types them;
- the block before the quick start (the introduction) runs on the example database just as
  the quick start's script makes it;
- ``sbc-sql`` is the command line (``python -m sbc_sql``, this checkout first on the path),
  ``python`` and ``.venv/bin/python`` this interpreter; a script path (``examples/...``,
  ``benchmarks/...``) is read from the checkout;
- a part in brackets (``[--json]``) is optional: a line runs once without any of its
  bracketed parts and once with all of them;
- a ``toml`` block whose first line is ``# NAME`` is the file NAME of the next block's folder;
- a line with a ``postgresql://`` URL runs on the test suite's throwaway PostgreSQL (only
  the URL rewritten), a line with ``--engine spark`` under the ``spark`` marker;
- what cannot run here is listed in ``NOT_RUN`` with the reason.
"""

from __future__ import annotations

import json
import re
import shlex
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import duckdb
import pg_cluster
import pytest
from helpers import ROOT, checkout_env, pg_rows, to_postgres

from sbc_sql import install_sql, version

README = ROOT / "README.md"
#: the pages whose code runs: README, then every page of docs/ but those in ``NOT_RUN_PAGES``
NOT_RUN_PAGES = {
    "json.md": "holds JSON documents, not commands",
    "querying.md": "pipes the helpers into the duckdb and psql shells, and its SQL reads a "
    "release the shells would load them into; tests/test_query_helpers.py runs the helpers",
    "security.md": "holds no command",
    "dbt.md": "its commands install and run dbt; tests/test_dbt.py builds the example project it "
    "describes on dbt-duckdb and dbt-postgres",
    "README.md": "the index of the pages, no command",
}
PAGES = [README, *(p for p in sorted((ROOT / "docs").glob("*.md")) if p.name not in NOT_RUN_PAGES)]

#: the programs a command block's lines start with
PROGRAMS = (
    "sbc-sql",
    ".venv/bin/sbc-sql",
    "python",
    "python3",
    ".venv/bin/python",
    ".venv/bin/pip",
    "spark-submit",
)

#: commands of README and the pages that no test runs, and why
NOT_RUN = {
    "python3 -m venv .venv": "makes the virtual environment these tests already run in",
    ".venv/bin/pip install -q .": "installs the package from the index and the checkout; "
    "tests/test_packaging.py builds and installs the wheel",
    ".venv/bin/pip install -q '.[test]'": "installs the test dependencies these tests already run with",
    ".venv/bin/pip install -q --no-deps 'pycanon==1.3.6'": "installs a test dependency these tests "
    "already run with",
    ".venv/bin/python -m pytest -q -n auto": "runs the whole suite, this test included",
    '.venv/bin/python -m pytest -q -n auto -m "not slow"': "runs the fast tier of the suite",
    'spark-submit --master yarn --driver-memory 8g "$(python -m sbc_sql.spark_submit)" anonymize --engine '
    "spark -t hdfs:///data/visits.parquet -o hdfs:///release/visits_k10 -k 10": "names a YARN cluster "
    "and HDFS paths, placeholders of a cluster the tests do not have",
}

#: ``cluster``, ``sql`` and ``anonymize --sql`` write nothing, yet here they refuse an existing
#: release under the names of the one they describe (``patients_k5``, which the quick start
#: made), with exit code 1. They run on the example database as the quick start's script makes
#: it, before any release. Once commands that write nothing no longer refuse an existing
#: ``<table>_k<k>``, they pass in sequence like the others, and this list goes.
BEFORE_ANY_RELEASE = {
    "sbc-sql anonymize --db clinic.duckdb -t patients -k 5 --sql",
    "sbc-sql cluster  --db clinic.duckdb -t patients -k 5 --out ids.parquet",
    "sbc-sql sql      --db clinic.duckdb -t patients -k 5 --dialect snowflake",
}

QUICK_START = "## Quick start"
BRACKETED = re.compile(r"\s\[([^\]]+)\]")


@dataclass(frozen=True)
class Block:
    """One fenced block: its language, the page and line it starts on, its text, and whether
    it comes before the quick start's section."""

    lang: str
    line: int
    text: str
    before_quick_start: bool
    page: str = "README.md"

    @property
    def where(self) -> str:
        return f"{self.page} line {self.line}"


def readme_blocks(text: str, page: str = "README.md") -> list[Block]:
    """A page's fenced blocks, in order (only README has a quick start to come before)."""
    blocks: list[Block] = []
    lang, start, body, seen_quick_start = None, 0, [], page != "README.md"
    for number, line in enumerate(text.splitlines(), 1):
        if lang is None:
            if line.startswith(QUICK_START):
                seen_quick_start = True
            if line.startswith("```"):
                lang, start, body = line[3:].strip(), number, []
        elif line.startswith("```"):
            blocks.append(Block(lang, start, "\n".join(body), not seen_quick_start, page))
            lang = None
        else:
            body.append(line)
    assert lang is None, f"{page}: the block of line {start} is never closed"
    return blocks


def is_command_block(block: Block) -> bool:
    """A block of shell commands: no language (or sh) and a first line that runs a program."""
    first = block.text.strip().split(maxsplit=1)
    return block.lang in ("", "sh", "shell", "bash") and bool(first) and first[0] in PROGRAMS


def commands(block: Block) -> list[str]:
    """A command block's commands: continued lines joined, comments cut, ``&&`` split."""
    joined = re.sub(r"\\\n\s*", "", block.text)
    found = []
    for line in joined.splitlines():
        line = re.sub(r"\s+#.*$", "", line).strip()
        if not line:
            continue
        for part in line.split(" && "):
            part = part.strip()
            assert part.split()[0] in PROGRAMS, f"{block.where}: {part!r} runs no known program"
            found.append(part)
    return found


def variants(command: str) -> list[str]:
    """The command without its bracketed parts, and with all of them (if it has any)."""
    if BRACKETED.search(command) is None:
        return [command]
    bare = re.sub(r"\s+", " ", BRACKETED.sub("", command)).strip()
    full = re.sub(r"\s+", " ", BRACKETED.sub(lambda m: " " + m.group(1), command)).strip()
    return [bare, full]


def kind(command: str) -> str:
    """Which test runs a command: not at all, on PostgreSQL, on Spark, or on DuckDB."""
    if command in NOT_RUN:
        return "not run"
    if "postgresql://" in command:
        return "postgres"
    if "--engine spark" in command:
        return "spark"
    return "duckdb"


def argv(command: str) -> list[str]:
    """The process a command is: ``sbc-sql`` as ``python -m sbc_sql``, ``python`` as this
    interpreter, a script path of the checkout read from the checkout."""
    words = shlex.split(command)
    program, rest = words[0], words[1:]
    if program in ("sbc-sql", ".venv/bin/sbc-sql"):
        return [sys.executable, "-m", "sbc_sql", *rest]
    assert program in ("python", "python3", ".venv/bin/python"), f"no way to run {command!r}"
    if rest and not rest[0].startswith("-") and (ROOT / rest[0]).is_file():
        rest[0] = str(ROOT / rest[0])
    return [sys.executable, *rest]


def run(command: str, folder: Path, argv_of=argv, where: str = "README") -> None:
    """Run one command in ``folder`` and require exit code 0."""
    done = subprocess.run(
        argv_of(command), cwd=folder, env=checkout_env(), capture_output=True, text=True, timeout=900
    )
    assert done.returncode == 0, (
        f"{where}'s {command!r} exited {done.returncode}\nstdout:\n{done.stdout[-3000:]}\n"
        f"stderr:\n{done.stderr[-3000:]}"
    )


def run_python(block: Block, folder: Path) -> None:
    """Run a python block as a script of its own in ``folder``."""
    script = folder / f"block_{Path(block.page).stem}_{block.line}.py"
    script.write_text(block.text + "\n")
    done = subprocess.run(
        [sys.executable, script.name],
        cwd=folder,
        env=checkout_env(),
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert done.returncode == 0, (
        f"the python block of {block.where} exited {done.returncode}\n"
        f"stdout:\n{done.stdout[-3000:]}\nstderr:\n{done.stderr[-3000:]}"
    )


def toml_file(block: Block) -> tuple[str, str] | None:
    """A toml block whose first line is ``# NAME``: (NAME, its text)."""
    first = block.text.splitlines()[0] if block.text else ""
    named = re.fullmatch(r"#\s*(\S+\.toml)\s*", first)
    return (named.group(1), block.text + "\n") if block.lang == "toml" and named else None


def setup_blocks(blocks: list[Block]) -> list[Block]:
    """The quick start's commands that make what the rest read: its first command block and
    the one after it (the Adult release); the block that runs the tests is not one."""
    after = [b for b in blocks if not b.before_quick_start and is_command_block(b)]
    return [b for b in after[:3] if not all(kind(c) == "not run" for c in commands(b))][:2]


BLOCKS = [b for page in PAGES for b in readme_blocks(page.read_text(), page.name)]
SETUP = setup_blocks(BLOCKS)


def test_readme_is_read_as_the_rules_say() -> None:
    """The quick start makes the example database, visits.csv and the Adult release; every
    command is run by one of the tests below or listed with its reason, and nothing is listed
    that README and the pages no longer hold."""
    setup = [c for b in SETUP for c in commands(b)]
    assert any(
        "examples/make_clinic_db.py --out clinic.duckdb" in c and "--visits visits.csv" in c for c in setup
    )
    assert any(c.startswith("python benchmarks/datasets.py adult --db adult.duckdb") for c in setup)
    assert "sbc-sql anonymize --db adult.duckdb -t adult -k 10 --keep income --drop fnlwgt" in setup
    every = [c for b in BLOCKS if is_command_block(b) for c in commands(b)]
    assert set(NOT_RUN) <= set(every), set(NOT_RUN) - set(every)
    assert set(every) >= BEFORE_ANY_RELEASE, BEFORE_ANY_RELEASE - set(every)
    kinds = {kind(c) for c in every}
    assert kinds == {"not run", "postgres", "spark", "duckdb"}, kinds
    assert sum(b.lang == "python" for b in BLOCKS) == 3
    # a page of docs/ either runs or says why not
    assert {p.name for p in PAGES} | set(NOT_RUN_PAGES) == {"README.md"} | {
        p.name for p in (ROOT / "docs").glob("*.md")
    }
    assert variants("sbc-sql profile -t p [--qi age] [--json]") == [
        "sbc-sql profile -t p",
        "sbc-sql profile -t p --qi age --json",
    ]
    assert variants("sbc-sql measure  --db d") == ["sbc-sql measure  --db d"]


def example_folder(base: Path) -> Path:
    """The folder of the quick start's first commands before its first ``sbc-sql``: the
    example database (and visits.csv) as the quick start's script makes it."""
    folder = base / "example"
    folder.mkdir()
    for command in commands(SETUP[0]):
        if command.split()[0].endswith("sbc-sql"):
            break
        if kind(command) == "duckdb":
            run(command, folder)
    return folder


@pytest.mark.slow
def test_readme_commands_and_python_blocks_run_as_printed(tmp_path: Path) -> None:
    example = example_folder(tmp_path)
    quick = tmp_path / "quick_start"
    quick.mkdir()
    for block in SETUP:
        for command in commands(block):
            if kind(command) == "duckdb":
                run(command, quick)
    ran, files = 0, {}
    for block in BLOCKS:
        if block in SETUP:
            continue
        named = toml_file(block)
        if named is not None:
            files[named[0]] = named[1]
            continue
        if block.lang == "python":
            folder = fresh(quick, tmp_path, block)
            run_python(block, folder)
            ran += 1
            continue
        if not is_command_block(block) or all(kind(c) != "duckdb" for c in commands(block)):
            continue
        folder = fresh(example if block.before_quick_start else quick, tmp_path, block)
        for name, text in files.items():
            (folder / name).write_text(text)
        files = {}
        for command in commands(block):
            if kind(command) != "duckdb":
                continue
            if command in BEFORE_ANY_RELEASE:
                run(command, fresh(example, tmp_path, block, f"_{ran}"), where=block.where)
                ran += 1
                continue
            for variant in variants(command):
                run(variant, folder, where=block.where)
                ran += 1
    assert ran >= 40, f"only {ran} commands and blocks ran: have README and the pages lost their examples?"


def fresh(source: Path, base: Path, block: Block, suffix: str = "") -> Path:
    """A copy of ``source`` for one block."""
    return Path(shutil.copytree(source, base / f"block_{Path(block.page).stem}_{block.line}{suffix}"))


def pg_commands() -> list[str]:
    return [c for b in BLOCKS if is_command_block(b) for c in commands(b) if kind(c) == "postgres"]


@pytest.mark.slow
def test_readme_install_sql_and_its_sql_run_on_postgres(
    postgres_cluster: pg_cluster.Cluster, postgres_url: str, tmp_path: Path
) -> None:
    """The commands with a ``postgresql://`` URL (README's recipe: anonymize, verify,
    install-sql), the throwaway server's URL in place of theirs, on the example's patients
    copied there with their comments; then the SQL block of docs/engines.md."""
    reason = pg_cluster.plpython(postgres_cluster)
    if reason is not None:
        pytest.fail(f"no PL/Python for the server: {reason}")
    assert any(" install-sql " in c for c in pg_commands()), "README no longer shows install-sql"
    assert any(" anonymize " in c for c in pg_commands()), "README no longer anonymizes in PostgreSQL"
    # where the server imports sbc-sql from must be readable by its user: a checkout under a
    # private directory is not, and is then linked where it is (as tests/test_plpython.py does)
    default = install_sql.default_path()
    readable = pg_cluster.python_path(postgres_cluster, default)
    reach = "".join(f" --python-path {shlex.quote(p)}" for p in readable) if readable != default else ""
    with duckdb.connect(str(example_folder(tmp_path) / "clinic.duckdb"), read_only=True) as con:
        to_postgres(con, "patients", postgres_url)
    for command in pg_commands():
        rewritten = re.sub(r"postgresql://\S+", postgres_url, command)
        run(rewritten + (reach if " install-sql " in command else ""), tmp_path)
    blocks = {Path(b.page).name: b for b in BLOCKS if b.lang == "sql"}
    assert sorted(blocks) == ["engines.md", "pipelines.md"]

    def answers(block: Block) -> list[list[tuple]]:
        statements = [s.strip() for s in block.text.split(";") if s.strip()]
        return [pg_rows(postgres_url, statement) for statement in statements]

    got = answers(blocks["engines.md"])
    summary, ok, ncp, said = (json.loads(a[0][0]) if i != 1 else a[0][0] for i, a in enumerate(got))
    assert (summary["release"], summary["k"], summary["rows"]) == ("patients_k5", 5, 2000)
    assert ok == "true"
    assert float(ncp) == pytest.approx(summary["total_ncp"])
    assert said["sbc_sql"] == version.__version__
    # the pipelines page: an incremental release, then its refresh (nothing new yet)
    made, refreshed = (json.loads(a[0][0]) for a in answers(blocks["pipelines.md"]))
    assert (made["release"], made["ok"]) == ("patients_daily", True)
    assert refreshed["schema"] == "sbc-sql/refresh"
    assert (refreshed["release_version"], refreshed["rows_added"]) == (1, 0)


@pytest.mark.slow
@pytest.mark.spark
def test_readme_spark_commands_run_as_printed(spark, tmp_path: Path) -> None:
    """Each Spark block in order, in a folder of its own (each ``sbc-sql`` a process with a
    local session of its own), after the line that makes its visits file: README's recipe,
    then docs/engines.md's; ``spark`` is the session's fixture, asked for only to skip (or,
    in CI, fail) without pyspark or Java."""
    blocks = [b for b in BLOCKS if is_command_block(b) and any(kind(c) == "spark" for c in commands(b))]
    assert [b.page for b in blocks] == ["README.md", "engines.md"]
    ran = 0
    for block in blocks:
        folder = tmp_path / f"{Path(block.page).stem}_{block.line}"
        folder.mkdir()
        for command in commands(block):
            assert kind(command) in ("spark", "duckdb"), command
            run(command, folder, where=block.where)
            ran += 1
    assert ran == 3 + 5
    assert (tmp_path / f"README_{blocks[0].line}" / "lake" / "visits_k10").is_dir()
    assert (tmp_path / f"engines_{blocks[1].line}" / "out" / "visits_k10").is_dir()
