"""The names the command line offers as choices, and nothing else: engines, modes, leftover
modes, the algorithms with their descriptions, l-diversity variants, warehouse dialects,
classifiers and suggest-k's scales.

This module imports nothing, so that the options' catalogue (plan/catalogue.py) can declare
every option (its choices, help and defaults) without loading DuckDB, Arrow, numpy or
sqlglot: ``--help`` and ``--version`` then answer in the time Python and typer take to
start, and a command loads only the modules its body needs. The modules that implement each
choice take its names from here (``plan.MODES``, ``cluster.leftover.LEFTOVER_MODES``, ...),
so there is one list; the algorithm table, whose entries are the registry's
(:data:`sbc_sql.cluster.registry.CLUSTERERS`), is held equal to it by a test."""

from __future__ import annotations

#: how a release recodes each class's QIs: generalized (ranges and value sets) or
#: microaggregated (one value per QI: sbc_sql.stages.write)
RECODES = ("generalize", "microaggregate")
#: a microaggregated numeric QI's value: its class's mean, (lower) median or mode
AGGREGATES = ("mean", "median", "mode")
#: a microaggregated categorical QI's value: its class's mode, or its value set as generalized
CATEGORICAL_AGGREGATES = ("mode", "values")

#: the engines a caller names (PostgreSQL is named by its URL)
ENGINES = ("duckdb", "spark")
#: how a table is clustered: auto (the algorithm's choice), exact (one block) or blocks
MODES = ("auto", "exact", "blocks", "streamed")
#: where the rows left when fewer than k remain go (sbc_sql.cluster.leftover)
LEFTOVER_MODES = ("nearest", "last", "suppress")

#: the algorithm a run uses unless told otherwise
DEFAULT_ALGORITHM = "sbca"
#: every algorithm's name and description, in the registry's order
ALGORITHMS = {
    "sbca": "cluster-aware SBCA",
    "sbca-paper": "the paper's SBCA",
    "mondrian": "strict multidimensional median partitioning",
    "kmember": "greedy k-member clustering",
    "datafly": "full-domain recoding, Datafly",
    "incognito": "full-domain recoding, Incognito",
    "kinc": "background knowledge bound J, k-anonymity first, incremental post-processing",
    "kagg": "background knowledge bound J, k-anonymity first, agglomerative post-processing",
    "beta-ge": "background knowledge bound J, beta-likeness first (buckets, splits, Hilbert order)",
}

#: the l-diversity variants (sbc_sql.privacy.l_diversity)
L_VARIANTS = ("distinct", "entropy")
#: the warehouses whose SQL ``sbc-sql sql`` prints (sbc_sql.warehouse)
DIALECTS = ("postgres", "snowflake", "bigquery", "trino", "spark")
#: evaluate --model's classifiers (sbc_sql.quality.model)
CLASSIFIERS = ("gbt", "logistic")

#: suggest-k's scales, each choice scored 25 (low) to 100 (very high) (sbc_sql.quality.suggest)
DOMAIN = {"medical": 75, "financial": 100, "sports": 25, "public": 25, "military": 75, "sales": 50}
PURPOSE = {"review": 25, "statistics": 50, "complex-statistics": 75, "data-mining": 100}
CRITICALITY = {"low": 25, "middle": 50, "high": 75, "very-high": 100}


def algorithms_help() -> str:
    """The ``--algorithm`` help: every name, the default with its description."""
    others = [n for n in ALGORITHMS if n != DEFAULT_ALGORITHM]
    listed = ", ".join(others[:-1]) + f" or {others[-1]}" if len(others) > 1 else "".join(others)
    return f"{DEFAULT_ALGORITHM} (default: {ALGORITHMS[DEFAULT_ALGORITHM]}), {listed}."
