"""The SparkSession the report runs in: embedded (local[*]) unless --master or spark-submit says otherwise."""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path

from pyspark import SparkConf
from pyspark.sql import SparkSession

from reports.class_archive import ClassArchive

DEFAULT_MASTER = "local[*]"
# Shuffle partitions when nobody chose: a few per core, and adaptive query
# execution coalesces them to what the data needs (the report's tables are
# aggregates, far smaller than its input).
MIN_SHUFFLE_PARTITIONS = 8
PARTITIONS_PER_CORE = 2
_PYTHON_CONF = "spark.pyspark.python"
_SHUFFLE_CONF = "spark.sql.shuffle.partitions"
_DRIVER_JAVA = "spark.driver.extraJavaOptions"


def java_problem() -> str | None:
    """Why Spark's JVM cannot start here, in one line; None when a java is there to start.

    PySpark's launcher runs $JAVA_HOME/bin/java when JAVA_HOME is set, else the java on PATH;
    without one it dies with a JAVA_GATEWAY_EXITED traceback that names neither.
    """
    if launched_by_spark_submit():
        return None  # the JVM is already running this interpreter
    java_home = os.environ.get("JAVA_HOME")
    if java_home:
        if os.access(Path(java_home) / "bin" / "java", os.X_OK):
            return None
        return f"JAVA_HOME={java_home} has no bin/java: point it at a Java runtime (17 or newer)"
    if shutil.which("java"):
        return None
    return ("no Java runtime for PySpark: install Java 17 or newer "
            "(Debian: apt-get install default-jre-headless, or run scripts/system-deps.sh as root)")


def launched_by_spark_submit() -> bool:
    """spark-submit (and the pyspark shell) start the JVM first and hand its gateway to Python."""
    return "PYSPARK_GATEWAY_PORT" in os.environ


def parse_conf(pairs: list[str]) -> dict[str, str]:
    """``--conf k=v`` values, as spark-submit takes them; ValueError names a malformed one."""
    parsed = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key.strip():
            raise ValueError(f"--conf {pair!r}: expected key=value")
        parsed[key.strip()] = value
    return parsed


#: HotSpot's tier-4 (C2) thresholds times ten (defaults 5000, 600, 15000, 40000)
C2_LATER = ("-XX:Tier4InvocationThreshold=50000", "-XX:Tier4MinInvocationThreshold=6000",
            "-XX:Tier4CompileThreshold=150000", "-XX:Tier4BackEdgeThreshold=400000")


def default_settings(master: str) -> dict[str, str]:
    """Settings the job wants unless the user (or spark-submit) set them."""
    settings = {
        "spark.ui.showConsoleProgress": "false",
        "spark.sql.session.timeZone": "UTC",
        # Partitions follow the data rather than a fixed count.
        "spark.sql.adaptive.enabled": "true",
        "spark.sql.adaptive.coalescePartitions.enabled": "true",
        # Spark lists more than 32 input paths with a distributed job, seconds
        # each time a frame over them is planned; one records file per run
        # crosses that quickly, and listing them from the driver takes milliseconds.
        "spark.sql.sources.parallelPartitionDiscovery.threshold": "100000",
        # Exact percentiles (the durations table) aggregate in a hash map of one buffer per case
        # and implementation; past 128 keys in a task Spark's default sorts every record instead.
        # The buffers hold the task's own values, so memory follows the task's input either way.
        "spark.sql.objectHashAggregate.sortBased.fallbackThreshold": "16384",
    }
    # Validation compiles into methods over the JVM's 8 KB JIT limit; without
    # this flag HotSpot leaves them interpreted, several times slower. The
    # parallel collector: a batch job wants throughput, and G1's concurrent
    # work cost about a tenth more CPU over the records (2026-11-26, BENCHMARKS.md).
    # C2 thresholds ten times HotSpot's: in a JVM that lives for one short job, C2 spent
    # more CPU compiling Spark's planner and Janino (warm for seconds only) than the tasks
    # spent on the records, on the same cores; the per-record loops still reach C2
    # (2026-11-27, BENCHMARKS.md).
    for role in ("driver", "executor"):
        settings[f"spark.{role}.extraJavaOptions"] = " ".join(("-XX:-DontCompileHugeMethods -XX:+UseParallelGC",
                                                                *C2_LATER))
    if master.startswith("local"):
        # Keep an embedded Spark on loopback: no hostname lookups, no listening on other interfaces.
        # Adaptive execution runs every shuffle as a job of its own and plans the rest again after
        # it: on one machine, with one partition per core, that costs more than it saves (BENCHMARKS.md).
        settings.update({
            "spark.sql.adaptive.enabled": "false",
            "spark.ui.enabled": "false",
            "spark.driver.host": "127.0.0.1",
            "spark.driver.bindAddress": "127.0.0.1",
        })
    return settings


def python_for_workers(conf: dict[str, str]) -> str:
    """The Python the executors run: the user's choice, else this interpreter.

    Spark's own default is "python3" on each worker's PATH, which on a cluster
    is often another version than the driver's and fails the job with
    PYTHON_VERSION_MISMATCH; the driver's interpreter runs the same code.
    """
    return conf.get(_PYTHON_CONF) or os.environ.get("PYSPARK_PYTHON") or sys.executable


def shuffle_partitions_for(cores: int, local: bool = False) -> int:
    # Embedded, without adaptive execution to coalesce them: one per core.
    return cores if local else max(MIN_SHUFFLE_PARTITIONS, PARTITIONS_PER_CORE * cores)


def build_session(
    master: str | None = None,
    shuffle_partitions: int | None = None,
    app_name: str = "conformance-report",
    driver_memory: str | None = None,
    conf: dict[str, str] | None = None,
    class_archive: ClassArchive | None = None,
) -> SparkSession:
    """A session for the report.

    Precedence, highest first: ``conf`` and the explicit arguments; what
    spark-submit (or spark-defaults.conf) set; the job's defaults. Without
    ``master`` the job runs on spark-submit's master, or embedded (local[*])
    when not launched by spark-submit. An embedded JVM started here with the
    job's own JVM options uses ``class_archive`` (then stop it with ``stop_session``).
    """
    explicit = dict(conf or {})
    if master:
        explicit["spark.master"] = master
    if driver_memory:
        # Only takes effect when this call starts the JVM (local mode runs the executors in it too).
        explicit["spark.driver.memory"] = driver_memory
    if shuffle_partitions:
        explicit[_SHUFFLE_CONF] = str(shuffle_partitions)
    submitted = launched_by_spark_submit()
    if not submitted:
        explicit.setdefault("spark.master", DEFAULT_MASTER)
        explicit.setdefault("spark.app.name", app_name)
    # spark-submit turns spark.pyspark.python into PYSPARK_PYTHON for the driver;
    # PySpark reads only the variable and sends its value to every executor.
    os.environ["PYSPARK_PYTHON"] = python_for_workers(explicit)

    from pyspark import SparkContext

    launch = dict(explicit)
    if not submitted:
        if launch["spark.master"].startswith("local"):
            # Read by the JVM at start-up: an embedded Spark resolves no hostname.
            os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
        # JVM options count only at launch, and PySpark's launcher sets some
        # settings (console progress) itself unless given; spark-submit's JVM
        # has started already, so there its settings stand.
        launch = {**default_settings(launch["spark.master"]), **launch}
        if class_archive is not None and launch["spark.master"].startswith("local") and _DRIVER_JAVA not in explicit:
            options = launch[_DRIVER_JAVA]
            archive = class_archive.java_options(options, launch.get("spark.driver.memory"))
            launch[_DRIVER_JAVA] = f"{options} {archive}".strip()
    SparkContext._ensure_initialized(conf=SparkConf(loadDefaults=False).setAll(list(launch.items())))
    spark_conf = SparkConf()  # the JVM's settings: spark-submit's, spark-defaults.conf, the launch's
    effective_master = explicit.get("spark.master") or spark_conf.get("spark.master", None) or DEFAULT_MASTER
    spark_conf.set("spark.master", effective_master)
    spark_conf.setIfMissing("spark.app.name", app_name)
    for key, value in default_settings(effective_master).items():
        spark_conf.setIfMissing(key, value)
    spark_conf.setAll(list(explicit.items()))
    session = SparkSession.builder.config(conf=spark_conf).getOrCreate()
    session.sparkContext.setLogLevel("ERROR")
    if not spark_conf.contains(_SHUFFLE_CONF):
        # Spark's 200 mostly schedules empty tasks for the report's aggregates.
        cores = session.sparkContext.defaultParallelism
        session.conf.set(_SHUFFLE_CONF, str(shuffle_partitions_for(cores, effective_master.startswith("local"))))
    return session


def stop_session(session: SparkSession, class_archive: ClassArchive | None = None) -> None:
    """Stop the session; in the run that writes ``class_archive``, also end its JVM so it writes the archive."""
    session.stop()
    if class_archive is not None and class_archive.writing is not None:
        from pyspark import SparkContext

        gateway = SparkContext._gateway
        class_archive.finish(getattr(gateway, "proc", None))
        # that JVM is gone: a later session starts another
        SparkContext._gateway = SparkContext._jvm = None
