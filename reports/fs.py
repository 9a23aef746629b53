"""Inputs and outputs as URIs, through Hadoop's FileSystem (the one Spark reads and writes with).

A plain path is a local one; ``file://``, ``hdfs://``, ``s3a://`` and any
scheme Spark has a connector for work the same way, so a report can read
runs from and write to storage every executor sees.
"""

from __future__ import annotations

from pathlib import Path
from urllib.parse import unquote, urlparse

from pyspark.sql import SparkSession

# Hidden folders, Spark's own (_temporary) and installed node packages never hold runs.
SKIPPED_PREFIXES = (".", "_")
SKIPPED_NAMES = ("node_modules",)


def local_path(uri: str) -> Path | None:
    """The local path behind a plain path or ``file:`` URI; None for other schemes."""
    parsed = urlparse(uri)
    if parsed.scheme in ("", "file") or (len(parsed.scheme) == 1 and uri[1:2] == ":"):
        return Path(unquote(parsed.path) if parsed.scheme == "file" else uri)
    return None


def display(uri: str) -> str:
    """How a location is shown: a local path as a path, anything else as its URI."""
    path = local_path(uri)
    return str(path) if path is not None else uri


class LocationError(ValueError):
    """A location Hadoop cannot parse, or whose scheme has no filesystem here."""


class FileSystems:
    """Hadoop FileSystem calls made from the driver, over Spark's own Hadoop configuration."""

    def __init__(self, spark: SparkSession) -> None:
        self._jvm = spark.sparkContext._jvm
        self._conf = spark.sparkContext._jsc.hadoopConfiguration()

    def _resolve(self, uri: str):
        from py4j.protocol import Py4JJavaError

        try:
            path = self._jvm.org.apache.hadoop.fs.Path(uri)
            fs = path.getFileSystem(self._conf)
        except Py4JJavaError as exc:
            raise LocationError(f"{uri}: {exc.java_exception.toString()}") from None
        return fs, fs.makeQualified(path)

    def qualify(self, uri: str) -> str:
        """The absolute URI Spark will use (``file:/abs/path`` for a relative local path)."""
        return self._resolve(uri)[1].toString()

    def kind(self, uri: str) -> str | None:
        """"file", "dir", or None when nothing is there."""
        fs, path = self._resolve(uri)
        if not fs.exists(path):
            return None
        return "dir" if fs.getFileStatus(path).isDirectory() else "file"

    def files_under(self, uri: str) -> list[tuple[str, str]]:
        """(folder URI, file name) of every file below a folder, skipping hidden and Spark-internal ones."""
        fs, root = self._resolve(uri)
        found: list[tuple[str, str]] = []
        pending = [root]
        while pending:
            folder = pending.pop()
            for status in fs.listStatus(folder):
                path = status.getPath()
                name = path.getName()
                if name.startswith(SKIPPED_PREFIXES) or name in SKIPPED_NAMES:
                    continue
                if status.isDirectory():
                    pending.append(path)
                else:
                    found.append((folder.toString(), name))
        return found

    def names_in(self, uri: str) -> list[str]:
        """Names of a folder's entries."""
        fs, folder = self._resolve(uri)
        return [status.getPath().getName() for status in fs.listStatus(folder)]

    def mkdirs(self, uri: str) -> str:
        fs, path = self._resolve(uri)
        fs.mkdirs(path)
        return path.toString()

    def write_text(self, uri: str, text: str) -> None:
        fs, path = self._resolve(uri)
        stream = fs.create(path, True)
        try:
            stream.write(bytearray(text.encode("utf-8")))
        finally:
            stream.close()


def child(uri: str, *names: str) -> str:
    return "/".join([uri.rstrip("/"), *names])
