"""The JVM class archive's life cycle: written by the first run, read by the next, never an error."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("pyspark", reason="pyspark is not installed: pip install .[report]")

from reports.class_archive import ClassArchive, archive_key  # noqa: E402

OPTIONS = "-XX:+UseParallelGC"


def _jvm_writing(path: Path, code: int = 0) -> subprocess.Popen:
    """Stands in for the gateway JVM: waits for its stdin to close, then writes the archive and exits."""
    script = (
        "import sys; sys.stdin.read(); "
        f"open({str(path)!r}, 'wb').write(b'archive'); sys.exit({code})"
    )
    return subprocess.Popen([sys.executable, "-c", script], stdin=subprocess.PIPE)


def _written(options: str) -> Path:
    (flag,) = [o for o in options.split() if o.startswith("-XX:ArchiveClassesAtExit=")]
    return Path(flag.partition("=")[2])


def test_first_run_writes_the_archive_and_the_next_reads_it(tmp_path: Path) -> None:
    first = ClassArchive(tmp_path / "cache")
    options = first.java_options(OPTIONS, "4g")
    part = _written(options)
    assert part.parent == tmp_path / "cache" and "SharedArchiveFile" not in options
    first.finish(_jvm_writing(part))
    archive = tmp_path / "cache" / f"{archive_key(OPTIONS, '4g')}.jsa"
    assert archive.read_bytes() == b"archive"
    assert list((tmp_path / "cache").iterdir()) == [archive]  # no part file left

    second = ClassArchive(tmp_path / "cache")
    options = second.java_options(OPTIONS, "4g")
    assert f"-XX:SharedArchiveFile={archive}" in options and "ArchiveClassesAtExit" not in options
    second.finish(None)  # a run that read the archive has nothing to finish
    assert archive.read_bytes() == b"archive"


def test_other_options_or_heap_get_an_archive_of_their_own(tmp_path: Path) -> None:
    keys = {archive_key(OPTIONS, "4g"), archive_key(OPTIONS, "8g"), archive_key("-XX:+UseG1GC", "4g")}
    assert len(keys) == 3


def test_a_failed_write_leaves_no_archive(tmp_path: Path) -> None:
    archive = ClassArchive(tmp_path / "cache")
    part = _written(archive.java_options(OPTIONS, None))
    archive.finish(_jvm_writing(part, code=1))  # the JVM failed on its way out: its file may be partial
    assert list((tmp_path / "cache").iterdir()) == []


def test_an_unusable_cache_folder_means_no_options(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("not a folder", encoding="utf-8")
    archive = ClassArchive(blocker / "cache")
    assert archive.java_options(OPTIONS, None) == ""
    archive.finish(None)


def test_the_switch_turns_the_archive_off(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CONFORMANCE_REPORT_CLASS_ARCHIVE", "off")
    archive = ClassArchive(tmp_path / "cache")
    assert archive.java_options(OPTIONS, None) == ""
    assert not (tmp_path / "cache").exists()


def test_only_the_archives_used_last_are_kept(tmp_path: Path) -> None:
    import os
    folder = tmp_path / "cache"
    folder.mkdir()
    for age, name in enumerate(["newer.jsa", "older.jsa", "oldest.jsa"], start=1):
        (folder / name).write_bytes(b"old archive")
        os.utime(folder / name, (1_000_000 - age, 1_000_000 - age))
    archive = ClassArchive(folder)
    part = _written(archive.java_options(OPTIONS, None))
    archive.finish(_jvm_writing(part))
    assert sorted(p.name for p in folder.iterdir()) == sorted([f"{archive_key(OPTIONS, None)}.jsa", "newer.jsa"])


def test_no_home_means_no_archive_and_no_error(monkeypatch: pytest.MonkeyPatch) -> None:
    # a container run as a user the image does not know: no HOME, no passwd entry
    from reports import class_archive
    monkeypatch.delenv("XDG_CACHE_HOME", raising=False)
    monkeypatch.setattr(class_archive.os.path, "expanduser", lambda path: path)  # what 3.11 does then
    archive = ClassArchive()
    assert archive.folder is None and archive.java_options(OPTIONS, None) == ""
    archive.finish(None)
