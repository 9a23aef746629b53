"""Build the matrix page's model from collected matrix rows (driver side)."""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from reports.html_matrix import CaseRow, Cell, ProtocolMatrix


def spec_href(spec_ref: str, spec_root: Path | None, out_dir: Path) -> str:
    """specRef is ``<spec file>#<section>``; link the file relative to the page when it exists."""
    file_part, _, section = spec_ref.partition("#")
    if spec_root is not None and file_part and (spec_root / file_part).is_file():
        target = os.path.relpath(spec_root / file_part, out_dir)
        return f"{target}#{section}" if section else target
    return spec_ref


def wirelog_href(run_dir: str, wirelog: str | None, out_dir: Path) -> str | None:
    if not wirelog or "://" in run_dir:
        return None
    return os.path.relpath(Path(run_dir) / wirelog, out_dir)


def protocol_matrices(
    rows: Iterable[Any], spec_root: Path | None, out_dir: Path, column_notes: dict[tuple[str, str], str] | None = None
) -> list[ProtocolMatrix]:
    """rows: matrix cells with attribute access (Spark rows); column_notes: (protocol, implementation) -> text
    shown under the column heading."""
    by_protocol: dict[str, ProtocolMatrix] = {}
    case_rows: dict[str, dict[tuple[str, str], CaseRow]] = {}
    for r in rows:
        matrix = by_protocol.setdefault(r.protocol, ProtocolMatrix(r.protocol, [], [], {}))
        row = CaseRow(r.family, r.case, r.transport, r.requirement)
        case_rows.setdefault(r.protocol, {}).setdefault((r.case, r.transport), row)
        matrix.cells[(r.implementation, r.case, r.transport)] = Cell(
            grade=r.grade,
            spec_ref=r.specRef,
            spec=r.spec,
            message=r.message,
            spec_href=spec_href(r.specRef, spec_root, out_dir),
            wirelog_href=wirelog_href(r.runDir, r.wirelog, out_dir),
            attachments=r.attachments,
        )
    for protocol, matrix in by_protocol.items():
        matrix.implementations = sorted({impl for impl, _, _ in matrix.cells})
        matrix.column_notes = {i: (column_notes or {}).get((protocol, i), "") for i in matrix.implementations}
        matrix.cases = sorted(case_rows[protocol].values(), key=lambda c: (c.family, c.case, c.transport))
    return [by_protocol[p] for p in sorted(by_protocol)]
