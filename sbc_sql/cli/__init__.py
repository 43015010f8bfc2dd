"""The sbc-sql command line (typer only: no SQL and no algorithm here).

:mod:`.app` is the plumbing (the app, its commands' class, errors and exit codes), and
:mod:`.options` makes each command's typer parameters from :mod:`sbc_sql.plan.catalogue`;
each command is a thin wrapper over the Python function it runs: :mod:`.anonymize`,
:mod:`.refresh` (refresh), :mod:`.audit` (measure, verify), :mod:`.quality` (evaluate,
profile, report, compare, suggest-k), :mod:`.warehouse` (sql, cluster) and :mod:`.install`
(install-sql). Importing this package registers them on :data:`app`.

Under ``--json``, anonymize, verify and measure print ``documents.summary_dict(result)``,
``documents.verify_dict(verdict)`` and ``documents.measure_dict(measures)``: the documents
the SQL functions return (:mod:`sbc_sql.server`).
"""

# the clock the progress bar reads, as sbc_sql.cli.time
import time

from . import anonymize, audit, install, quality, refresh, warehouse
from .anonymize import anonymize_cmd, summary_text
from .app import _TYPERS, SbcCommand, SbcGroup, SbcTyper, _Coercion, app, reported
from .audit import VERIFY_FAILED, measure_cmd, verify_cmd
from .install import install_sql_cmd
from .progress import ProgressBar
from .quality import compare_cmd, evaluate_cmd, profile_cmd, report_cmd, suggest_k_cmd
from .refresh import refresh_cmd
from .warehouse import cluster_cmd, sql_cmd

__all__ = [
    "VERIFY_FAILED",
    "_TYPERS",
    "ProgressBar",
    "SbcCommand",
    "SbcGroup",
    "SbcTyper",
    "_Coercion",
    "anonymize",
    "anonymize_cmd",
    "app",
    "audit",
    "cluster_cmd",
    "compare_cmd",
    "evaluate_cmd",
    "install",
    "install_sql_cmd",
    "measure_cmd",
    "profile_cmd",
    "quality",
    "refresh",
    "refresh_cmd",
    "report_cmd",
    "reported",
    "sql_cmd",
    "suggest_k_cmd",
    "summary_text",
    "time",
    "verify_cmd",
    "warehouse",
]
