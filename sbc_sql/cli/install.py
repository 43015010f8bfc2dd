"""``sbc-sql install-sql``: the SQL functions made callable in a PostgreSQL database, a thin
wrapper over :mod:`sbc_sql.install_sql`."""

from types import SimpleNamespace

import typer

from .app import reported
from .options import command


@command("install-sql")
def install_sql_cmd(o: SimpleNamespace) -> None:
    """Make sbc-sql callable from SQL in a PostgreSQL database: the schema sbc with
    sbc.anonymize(...), sbc.verify(...), sbc.measure(...) and sbc.version(), PL/Python
    functions (plpython3u) that run inside the server, in the caller's transaction. Needs a
    superuser, and sbc-sql installed where the server's Python can import it. Running it again
    replaces the functions; --uninstall removes them.

    Example: sbc-sql install-sql --db postgresql://postgres@localhost/clinic, then in SQL:
    SELECT sbc.anonymize(source => 'public.patients', k => 5, output => 'patients_k5');
    """
    with reported():
        from .. import install_sql

        if o.uninstall:
            dropped = install_sql.uninstall(o.db)
            typer.echo("dropped " + ", ".join(dropped) if dropped else "nothing to uninstall: no schema sbc")
            return
        installed = install_sql.install(o.db, python_path=o.python_path, grant=o.grant or ())
    typer.echo(install_sql.described(o.db, installed))
