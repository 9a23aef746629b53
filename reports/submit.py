"""The report as a Spark application, for spark-submit:

    spark-submit --master spark://HOST:7077 --conf spark.executor.memory=2g \\
        "$(python -c 'import reports.submit as m; print(m.__file__)')" --input RUNS... --out DIR

Arguments after the file are `conformance report`'s. The job runs on
spark-submit's master and settings unless --master or --conf after the file
say otherwise; spark-submit exits with the job's exit status.
"""

from __future__ import annotations

import os
import sys

if __name__ == "__main__":
    # spark-submit runs this file as a script, putting its folder first on the
    # path, where reports' own modules (coverage, tables, ...) would shadow
    # installed packages of the same names.
    here = os.path.dirname(os.path.abspath(__file__))
    sys.path[:] = [p for p in sys.path if os.path.abspath(p or ".") != here]

    from reports.cli import main

    sys.exit(main(sys.argv[1:]))
