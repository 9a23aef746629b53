"""A class-data-sharing archive for the embedded Spark's JVM (HotSpot's AppCDS, Java 13 and newer).

Starting Spark loads thousands of classes from its jars, parsing and verifying
each at every start. The first embedded run writes the classes it loaded to an
archive (``-XX:ArchiveClassesAtExit``) in a per-user cache folder; later runs
map it (``-XX:SharedArchiveFile``) instead (BENCHMARKS.md, issue 17).

The archive is named after what it depends on: the Java runtime, Spark's jars,
the JVM options and the heap size. Anything going wrong (no cache folder, a
JVM that cannot write or read the archive, a mismatch the JVM finds itself)
only means the JVM loads its classes the usual way: never an error, and the
JVM's own messages about it are silenced.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import time
from pathlib import Path
from subprocess import Popen, TimeoutExpired

# The JVM says why it did not use or write an archive as warnings on stdout; here that is no news.
_QUIET = "-Xlog:cds=off -Xlog:cds+dynamic=off"
# Writing happens as the JVM exits; a run killed meanwhile leaves its part file behind.
_STALE_PART_SECONDS = 24 * 3600
_EXIT_WAIT_SECONDS = 120
#: archives kept (about 190 MB each): the most recently used; another Java, Spark or heap size makes another
KEPT_ARCHIVES = 2
#: set to 0, off, no or false: no archive is read or written (a machine short of disk, or measuring a cold start)
SWITCH = "CONFORMANCE_REPORT_CLASS_ARCHIVE"


def enabled() -> bool:
    return os.environ.get(SWITCH, "").strip().lower() not in ("0", "off", "no", "false")


def cache_dir() -> Path | None:
    """The per-user cache folder, or None where there is no home to put it in (a container's unknown
    user: Path.home() raises on 3.12+, and 3.11 leaves "~" as a relative path)."""
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "conformance-report" / "jvm-classes" if os.path.isabs(base) else None


def _java_home() -> Path | None:
    java_home = os.environ.get("JAVA_HOME")
    if java_home:
        return Path(java_home)
    java = shutil.which("java")
    return Path(java).resolve().parent.parent if java else None


def _fingerprint(path: Path) -> list[object]:
    stat = path.stat()
    return [str(path.resolve()), stat.st_size, stat.st_mtime_ns]


def _jars() -> Path:
    from pyspark.find_spark_home import _find_spark_home

    return Path(_find_spark_home()) / "jars"


def archive_key(java_options: str, driver_memory: str | None) -> str:
    """What the archive depends on, hashed: the runtime, Spark's jars (by name, size and time) and the options.

    The JVM checks the runtime and the class path itself; the name keeps one archive per combination
    instead of one archive rewritten whenever two differ.
    """
    home = _java_home()
    if home is None:
        raise OSError("no Java runtime found")
    runtime = [path for path in (home / "release", home / "lib" / "server" / "libjvm.so") if path.exists()]
    jars = sorted(_jars().glob("*.jar"))
    parts = {
        "java": [_fingerprint(p) for p in runtime] or [str(home.resolve())],
        "jars": [[p.name, p.stat().st_size, p.stat().st_mtime_ns] for p in jars],
        "options": java_options,
        "memory": driver_memory,
    }
    return hashlib.sha256(json.dumps(parts).encode()).hexdigest()[:24]


class ClassArchive:
    """Chooses the JVM options for one run (``java_options``) and, in the run that writes the
    archive, puts it in place once the JVM has exited (``finish``)."""

    def __init__(self, folder: Path | None = None) -> None:
        self.folder = folder or cache_dir()  # None: no archive
        self.writing: Path | None = None
        self.archive: Path | None = None

    def java_options(self, java_options: str, driver_memory: str | None) -> str:
        """Options to add to the JVM's: read the archive when there is one, else write one at exit;
        none when the cache folder cannot be used."""
        if not enabled() or self.folder is None:
            return ""
        try:
            self.archive = self.folder / f"{archive_key(java_options, driver_memory)}.jsa"
            if self.archive.is_file():
                os.utime(self.archive)  # used now: the last to be pruned
                return f"-XX:SharedArchiveFile={self.archive} {_QUIET}"
            self.folder.mkdir(parents=True, exist_ok=True)
            self._drop_stale_parts()
            self.writing = self.folder / f"{self.archive.stem}.{os.getpid()}.{time.time_ns()}.part"
        except OSError:
            self.archive = self.writing = None
            return ""
        return f"-XX:ArchiveClassesAtExit={self.writing} {_QUIET}"

    def _prune(self) -> None:
        """Keep the KEPT_ARCHIVES archives used last: one per Java, Spark and option set ever used would only grow."""
        archives = sorted(self.folder.glob("*.jsa"), key=lambda p: p.stat().st_mtime, reverse=True)
        for old in archives[KEPT_ARCHIVES:]:
            if old != self.archive:
                old.unlink(missing_ok=True)

    def _drop_stale_parts(self) -> None:
        for part in self.folder.glob("*.part"):
            if time.time() - part.stat().st_mtime > _STALE_PART_SECONDS:
                part.unlink(missing_ok=True)

    def finish(self, jvm: Popen | None) -> None:
        """In the run that writes the archive: end the (stopped) session's JVM, wait while it
        writes the archive on its way out, and put the archive in place. Otherwise nothing."""
        if self.writing is None or self.archive is None:
            return
        try:
            if jvm is not None:
                # The gateway JVM exits when its stdin closes.
                if jvm.stdin is not None:
                    jvm.stdin.close()
                jvm.wait(timeout=_EXIT_WAIT_SECONDS)
            if self.writing.is_file() and self.writing.stat().st_size > 0 and jvm is not None and jvm.returncode == 0:
                os.replace(self.writing, self.archive)  # atomic: a run starting now maps a whole file or none
                self._prune()
        except (OSError, TimeoutExpired):
            pass
        finally:
            self.writing.unlink(missing_ok=True)
            self.writing = None
