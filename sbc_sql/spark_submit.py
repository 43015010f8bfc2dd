"""The sbc-sql command as a file for spark-submit, which runs a Python file, not a module:

    spark-submit --master yarn "$(python -m sbc_sql.spark_submit)" anonymize --engine spark \\
        -t hdfs:///data/visits.parquet -o hdfs:///release/visits_k10 -k 10

Run as a module by ``python -m`` it prints its own path (what spark-submit takes); run as
a file by spark-submit it is the sbc-sql command, on the driver spark-submit started (its
--master, --conf and --driver-memory hold; --spark-master would replace the master).
"""

from __future__ import annotations

import os
import sys

if __name__ == "__main__":
    if "PYSPARK_GATEWAY_PORT" in os.environ:
        # started by spark-submit: the file's folder comes first on the path, where the
        # package's own modules would pass for top-level ones
        if sys.path and os.path.abspath(sys.path[0]) == os.path.dirname(os.path.abspath(__file__)):
            sys.path.pop(0)
        from sbc_sql.__main__ import main

        main()
    else:
        print(os.path.abspath(__file__))
