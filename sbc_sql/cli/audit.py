"""``sbc-sql measure`` and ``sbc-sql verify``: thin wrappers over :func:`sbc_sql.measure` and
:func:`sbc_sql.verify`, a release read beside its input."""

from types import SimpleNamespace

import typer

from .. import documents
from .app import reported
from .database import check_engine, connected
from .options import command, criteria

#: exit code of a release that fails verification (1 is bad input, 2 typer's usage errors)
VERIFY_FAILED = 3


@command("measure")
def measure_cmd(o: SimpleNamespace) -> None:
    """NCP per QI and total, utility, classes and smallest class of a release.

    Example: sbc-sql measure --db clinic.duckdb --original patients --release patients_k5
    """
    conf = check_engine(o.engine, o.db, o.spark_master, o.spark_conf)
    with reported(), connected(o.engine, o.db, o.spark_master, conf) as database:
        from .. import api

        m = api.measure(database, o.original, o.release, attach=o.attach or ())
    if o.as_json:
        typer.echo(documents.dumps(documents.measure_dict(m)))
        return
    # counts as anonymize prints them (2,000)
    typer.echo(f"rows {m.n_rows:,}, released {m.released:,}, suppressed {m.suppressed:,}")
    typer.echo(f"classes {m.classes:,}, smallest {m.smallest:,}, mean {m.mean:,.2f}, largest {m.largest:,}")
    typer.echo(f"total NCP {m.total_ncp:.4f}, utility {m.utility:.4f}")
    for q, v in m.ncp.items():
        typer.echo(f"  NCP {q}: {v:.4f}")


@command("verify")
def verify_cmd(o: SimpleNamespace) -> None:
    """Check RELEASE against ORIGINAL as an auditor: exit 0 if it passes, 3 if it fails
    (one Error line per problem), 1 on bad input (a missing database, table or view), 2 on a
    usage error.

    It reads the roles from the release's provenance and the source's column comments, and
    refuses identifiers and QIs published raw; checks k-anonymity, each class's released
    values against the source, the class table against the rows, the release view against
    its tables and the text view against the text they give. A release without provenance
    is checked on roles read off its columns, and the output says so.

    Example: sbc-sql verify --db clinic.duckdb --original patients --release patients_k5 --k 5
    """
    conf = check_engine(o.engine, o.db, o.spark_master, o.spark_conf)
    with reported(), connected(o.engine, o.db, o.spark_master, conf) as database:
        from .. import api
        from ..privacy.criteria import Criteria

        verdict = api.verify(
            database,
            o.original,
            o.release,
            o.k,
            attach=o.attach or (),
            **criteria(o),
            max_suppression=o.max_suppression,
            qi=o.qi or (),
            identifier=o.identifier or (),
            sensitive=o.sensitive or (),
            keep=o.keep or (),
            allow_determinant=o.allow_determinant or (),
            population=o.population,
            k_map=o.k_map,
            delta_min=o.delta_min,
            delta_max=o.delta_max,
        )
    notes = "".join(f"; {note}" for note in verdict.notes)
    if o.as_json:
        typer.echo(documents.dumps(documents.verify_dict(verdict)))
    if verdict.ok and o.as_json:
        return
    if verdict.ok:
        facts = ", ".join(f"{key} {value:,}" for key, value in verdict.facts.items())
        asked = [Criteria(**criteria(o)).describe()]
        if o.population is not None:
            from ..plan import Population

            against = Population(o.population, o.k_map, o.delta_min, o.delta_max).describe()
            asked.append(f"{against} against the population '{o.population}'")
        held = ", ".join(a for a in asked if a)
        held = f", {held}," if held else ""
        typer.echo(f"ok: '{o.release}' is {o.k}-anonymous{held} and complete{notes} ({facts})")
        return
    for note in verdict.notes:
        typer.echo(f"note: {note}", err=True)
    for problem in verdict.problems:
        typer.echo(f"Error: {problem}", err=True)
    raise typer.Exit(VERIFY_FAILED)
