"""The Python side of the SQL functions ``sbc-sql install-sql`` creates in a PostgreSQL
database: ``sbc.anonymize``, ``sbc.verify``, ``sbc.measure`` and ``sbc.version`` call
:func:`call` from PL/Python, inside the server, in the caller's session and transaction.

Each runs the same function as the command line (``run.anonymize``, ``api.verify``,
``api.measure``) on the engine of :func:`sbc_sql.engines.in_server` and returns its summary as JSON.
An error is answered as JSON too, ``{"sbc_error": {"message": ..., "sqlstate": ...}}``, which
the SQL function (PL/pgSQL over the PL/Python one, sql/functions/install.sql) raises as a
PostgreSQL error of that SQLSTATE carrying the line the command line prints, ``Error: ...``,
and no context: raised from PL/Python, it would carry a Python traceback. An error that is
not sbc-sql's own (a fault) names only its type and place, since its text may quote the
data; the server's own error (a cancel, a lost connection) is left as it was.
"""

from __future__ import annotations

import json
import sys
import traceback
import typing
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from . import documents
from .errors import (
    EngineError,
    InputError,
    OutputExistsError,
    ResourceError,
    SbcError,
    VerificationError,
    in_sql_terms,
)
from .plan import catalogue
from .version import __version__

#: each function's parameters, in the order the SQL functions declare them, from the
#: options' catalogue (sql/functions/install.sql; tests/test_options.py holds the two together)
PARAMETERS: dict[str, tuple[str, ...]] = catalogue.sql_parameters()

#: the SQLSTATE each kind of error is raised with
_STATES: tuple[tuple[type[SbcError], str], ...] = (
    (OutputExistsError, "42P07"),  # duplicate_table
    (InputError, "22023"),  # invalid_parameter_value
    (VerificationError, "P0001"),  # raise_exception
    (ResourceError, "53200"),  # out_of_memory
    (EngineError, "58000"),  # system_error
    (SbcError, "XX000"),  # internal_error
)


def call(plpy: Any, function: str, args: Sequence[Any]) -> str:
    """Run ``function`` with the SQL function's arguments (positional, as declared), inside
    the server: its JSON summary, or the JSON of the error the SQL function raises
    (:func:`error`)."""
    from . import engines

    try:
        named = dict(zip(PARAMETERS[function], args, strict=True))
        engine = engines.in_server(plpy)
        with engine.borrowed():
            return json.dumps(_FUNCTIONS[function](engine, **named))
    except SbcError as err:
        state = next(s for kind, s in _STATES if isinstance(err, kind))
        return error(in_sql_terms(str(err)), state)
    except KeyboardInterrupt:
        return error("the run was interrupted; nothing was written", "57014")
    except plpy.SPIError:
        raise  # the server's own error (a cancel, a lost connection), as it was
    except Exception as err:
        return error(fault(err), "XX000")


def error(message: str, state: str) -> str:
    """The error the SQL function raises, as the PL/Python function answers it: a PostgreSQL
    error of SQLSTATE ``state`` whose text reads as the command line's line, ``Error:
    <message>``."""
    return json.dumps({"sbc_error": {"message": f"Error: {message}", "sqlstate": state}})


def fault(err: BaseException) -> str:
    """An unexpected error, by its type and where it was raised: its text may quote values."""
    frames = traceback.extract_tb(err.__traceback__)
    ours = [f for f in frames if "sbc_sql" in f.filename] or frames
    where = f" at {Path(ours[-1].filename).name}:{ours[-1].lineno}" if ours else ""
    return (
        f"sbc-sql failed with {type(err).__name__}{where} (its text is not shown, as it may quote "
        "the data); run the same with the sbc-sql command to see more"
    )


def _names(value: Sequence[str | None] | None, argument: str) -> tuple[str, ...]:
    """The column names of an array argument (NULL: none); a NULL among them is an
    InputError, as no column has that name."""
    names = tuple(value or ())
    nulls = sum(name is None for name in names)
    if nulls:
        raise InputError(
            f"{argument} => holds {nulls} NULL(s) among its {len(names)} element(s), and only "
            f"column names may be given; write {argument} => ARRAY['age', 'zip'] or leave it out"
        )
    return typing.cast(tuple[str, ...], names)


def _table(value: str | None, argument: str, example: str) -> str:
    """A table argument; NULL is an InputError."""
    if value is None:
        raise InputError(f"{argument} => is NULL; name a table or view, e.g. {argument} => '{example}'")
    return value


def _criteria(a: dict[str, Any]) -> dict[str, Any]:
    """The registered criteria's arguments, a NULL taking the option's default."""
    return {o.name: o.default if a[o.name] is None else a[o.name] for o in catalogue.CRITERIA_OPTIONS}


def _population(a: dict[str, Any]) -> dict[str, Any]:
    """k-map and delta-presence's arguments (NULL: not given)."""
    return {o.name: a[o.name] for o in catalogue.POPULATION_OPTIONS}


def _anonymize(engine: Any, **a: Any) -> dict[str, object]:
    from .run import anonymize

    if a["k"] is None:
        raise InputError("--k is NULL; give --k 2 or more")
    result = anonymize(
        engine,
        a["source"],
        a["k"],
        output=a["output"],
        qi=_names(a["qi"], "qi"),
        sensitive=_names(a["sensitive"], "sensitive"),
        drop=_names(a["drop_columns"], "drop_columns"),
        keep=_names(a["keep"], "keep"),
        replace=bool(a["replace"]),
        leftover=a["leftover"] or "nearest",
        recode=a["recode"] or "generalize",
        aggregate=a["aggregate"],
        aggregate_categorical=a["aggregate_categorical"],
        weights=a["weights"],
        algorithm=a["algorithm"] or "sbca",
        mode=a["mode"] or "auto",
        max_suppression=0.01 if a["max_suppression"] is None else a["max_suppression"],
        **_criteria(a),
        seed=a["seed"],
        allow_determinant=_names(a["allow_determinant"], "allow_determinant"),
        workers=1,
        incremental=bool(a["incremental"]),
        **_population(a),
    )
    with result:
        return documents.summary_dict(result)


def _refresh(engine: Any, **a: Any) -> dict[str, object]:
    from .run.refresh import refresh

    release = _table(a["release"], "release", "public.patients_k5")
    return documents.refresh_dict(refresh(engine, release))


def _verify(engine: Any, **a: Any) -> dict[str, object]:
    from .api import verify

    if a["k"] is None:
        raise InputError("k => is NULL; give the k the release was made for, k => 2 or more")
    verdict = verify(
        engine,
        _table(a["original"], "original", "public.patients"),
        _table(a["release"], "release", "public.patients_k5"),
        a["k"],
        **_criteria(a),
        max_suppression=a["max_suppression"],
        qi=_names(a["qi"], "qi"),
        identifier=_names(a["identifier"], "identifier"),
        sensitive=_names(a["sensitive"], "sensitive"),
        keep=_names(a["keep"], "keep"),
        allow_determinant=_names(a["allow_determinant"], "allow_determinant"),
        **_population(a),
    )

    return documents.verify_dict(verdict)


def _measure(engine: Any, **a: Any) -> dict[str, object]:
    from .api import measure
    from .plan import parse_weights

    weights = parse_weights(a["weights"]) if a["weights"] else None
    original = _table(a["original"], "original", "public.patients")
    release = _table(a["release"], "release", "public.patients_k5")
    return documents.measure_dict(measure(engine, original, release, weights=weights))


def _version(engine: Any) -> dict[str, object]:
    """What the server runs: sbc-sql's version, its Python and where they were found (the
    probe ``install-sql`` calls before it commits)."""
    import numpy
    import pyarrow

    from .cluster.sbca_plus import compiled

    return {
        "sbc_sql": __version__,
        "python": ".".join(map(str, sys.version_info[:3])),
        "numpy": numpy.__version__,
        "pyarrow": pyarrow.__version__,
        "kernels": compiled.engine(),
        "location": str(Path(__file__).resolve().parent),
    }


_FUNCTIONS: dict[str, Callable[..., dict[str, object]]] = {
    "anonymize": _anonymize,
    "refresh": _refresh,
    "verify": _verify,
    "measure": _measure,
    "version": _version,
}
