"""One ``sbc-sql`` command on a DuckDB file, run in this process as ``python -m sbc_sql``
runs it, with DuckDB's own memory watched: the peak of its buffer manager's memory and of
what it spilled to disk, sampled every quarter second.

    python benchmarks/watched.py DB anonymize --db DB -t t -k 10 ...

A connection opened here before the command shares the command's database (DuckDB keeps one
instance per file in a process), and a thread reads ``duckdb_memory()`` through it while the
command runs. The command's output is its own; the peaks go to stderr as one last line,
``sbc-bench-duckdb {"memory_bytes": ..., "spill_bytes": ...}``, which bench_scale.py reads.
The process exits with the command's code.
"""

from __future__ import annotations

import json
import runpy
import sys
import threading

import duckdb

#: seconds between two samples of DuckDB's memory
EVERY = 0.25
#: the line's prefix bench_scale.py looks for
PREFIX = "sbc-bench-duckdb "


def main() -> int:
    db, args = sys.argv[1], sys.argv[2:]
    watch = duckdb.connect(db)
    peak = {"memory_bytes": 0, "spill_bytes": 0}
    stop = threading.Event()

    def sample() -> None:
        cursor = watch.cursor()
        while not stop.wait(EVERY):
            used, spilled = cursor.execute(
                "SELECT sum(memory_usage_bytes), sum(temporary_storage_bytes) FROM duckdb_memory()"
            ).fetchone()
            peak["memory_bytes"] = max(peak["memory_bytes"], int(used or 0))
            peak["spill_bytes"] = max(peak["spill_bytes"], int(spilled or 0))

    thread = threading.Thread(target=sample, daemon=True)
    thread.start()
    sys.argv = ["sbc-sql", *args]
    code = 0
    try:
        runpy.run_module("sbc_sql", run_name="__main__", alter_sys=True)
    except SystemExit as done:
        code = done.code if isinstance(done.code, int) else (0 if done.code is None else 1)
    finally:
        stop.set()
        thread.join()
        print(PREFIX + json.dumps(peak), file=sys.stderr, flush=True)
    return code


if __name__ == "__main__":
    sys.exit(main())
