"""Apache Spark: a SparkSession (one sbc-sql builds, ``local[*]`` by default, or the caller's)
running the stages' SQL, rendered in the project's Spark dialect.

A run's working tables are the session's temporary views, materialized where the stages
create a table: the engine rewrites each statement tree before it runs (CREATE TABLE ... AS
becomes CACHE TABLE ... AS, a temporary view computed once; CREATE VIEW a temporary view;
ALTER TABLE ... RENAME a temporary view of the new name over the old one; DROP TABLE a DROP
VIEW). Nothing is written to the
catalog or to a file until the transaction commits: a COMMENT statement (the release's
provenance) is kept by the engine, and the commit writes each release whose provenance it
holds, with its class table, under temporary names, then renames them into place. A failure
or an interruption before the last rename removes what was written and leaves any output
that was there before as it was.

Names: a name with a slash in it, or one ending in .parquet, .pq, .csv or .tsv, is a path
(a file or a folder, on any file system Spark reads: ``file:``, ``hdfs:``, ``s3a:`` ...),
made absolute; any other is a table of the Spark catalog (``name``, ``db.name`` or
``catalog.db.name``). A path or a catalog table the stages read is registered as a
temporary view under the name they use for it.

The input is read once into a cached temporary view with a row id column (Spark's
``monotonically_increasing_id()``, computed once and kept in the cache): the clustering
reads the rows through it in the source's order and the class labels are joined back on it.
The default algorithm's block mode runs in Spark's workers (:mod:`.blocks`): the rows
never reach the driver, which holds a sample of them only. Exact mode, the other
algorithms, privacy criteria and background knowledge cluster on the driver, where the rows
are collected and must fit.

Errors are read by their error class (condition) only (see :mod:`.messages`); Spark's
text, which can quote a value, is never shown, and its log of failed queries is silenced
while the engine runs a statement.

The package, one module per concern: :mod:`.engine` (the engine), :mod:`.session` (the
session built here), :mod:`.connection` (calls inside the boundary), :mod:`.files` (paths
and files), :mod:`.parquet` (a Parquet input's footer: the types Spark cannot read),
:mod:`.catalog` (names and the catalog), :mod:`.transaction` (the commit),
:mod:`.ddl` (the statements rewritten), :mod:`.columns` (Spark's types), :mod:`.logs`
(pyspark's logs silenced), :mod:`.blocks` (the block mode in the workers) and
:mod:`.messages` (Spark's errors read).
"""

from __future__ import annotations

from .columns import type_info
from .connection import quoted
from .ddl import rewritten as _rewritten
from .engine import SparkEngine
from .files import PROVENANCE_FILE
from .session import _local_cores

__all__ = ["PROVENANCE_FILE", "SparkEngine", "_local_cores", "_rewritten", "quoted", "type_info"]
