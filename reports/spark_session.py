"""The SparkSession the report runs in: embedded (local[*]) unless --master says otherwise."""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path

from pyspark.sql import SparkSession

LOCAL_SHUFFLE_PARTITIONS = 8


def java_problem() -> str | None:
    """Why Spark's JVM cannot start here, in one line; None when a java is there to start.

    PySpark's launcher runs $JAVA_HOME/bin/java when JAVA_HOME is set, else the java on PATH;
    without one it dies with a JAVA_GATEWAY_EXITED traceback that names neither.
    """
    java_home = os.environ.get("JAVA_HOME")
    if java_home:
        if os.access(Path(java_home) / "bin" / "java", os.X_OK):
            return None
        return f"JAVA_HOME={java_home} has no bin/java: point it at a Java runtime (17 or newer)"
    if shutil.which("java"):
        return None
    return ("no Java runtime for PySpark: install Java 17 or newer "
            "(Debian: apt-get install default-jre-headless, or run scripts/system-deps.sh as root)")


def build_session(
    master: str = "local[*]",
    shuffle_partitions: int | None = None,
    app_name: str = "conformance-report",
    driver_memory: str | None = None,
) -> SparkSession:
    local = master.startswith("local")
    if local:
        # Keep an embedded Spark on loopback: no hostname lookups, no listening
        # on other interfaces, and workers run by this interpreter.
        os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
        os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    builder = (
        SparkSession.builder.appName(app_name)
        .master(master)
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.sql.session.timeZone", "UTC")
    )
    # Spark lists more than 32 input paths with a distributed job, seconds
    # each time a frame over them is planned; one records file per run
    # crosses that quickly, and listing them from the driver takes milliseconds.
    builder = builder.config("spark.sql.sources.parallelPartitionDiscovery.threshold", "100000")
    # Validation compiles into methods over the JVM's 8 KB JIT limit; without
    # this flag HotSpot leaves them interpreted, several times slower.
    for role in ("driver", "executor"):
        builder = builder.config(f"spark.{role}.extraJavaOptions", "-XX:-DontCompileHugeMethods")
    if driver_memory:
        # Only takes effect when this call starts the JVM (local mode runs the executors in it too).
        builder = builder.config("spark.driver.memory", driver_memory)
    if local:
        builder = builder.config("spark.driver.host", "127.0.0.1").config("spark.driver.bindAddress", "127.0.0.1")
    # A local job's tables are small; Spark's default of 200 shuffle partitions
    # would mostly schedule empty tasks.
    partitions = shuffle_partitions or (LOCAL_SHUFFLE_PARTITIONS if local else None)
    if partitions:
        builder = builder.config("spark.sql.shuffle.partitions", str(partitions))
    session = builder.getOrCreate()
    session.sparkContext.setLogLevel("ERROR")
    return session
