"""Build the matrix page's model from collected matrix rows (driver side)."""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from conformance.spec_links import public_spec_url, split_spec_ref
from reports.html_matrix import CaseRow, Cell, ProtocolMatrix


def spec_href(protocol: str, spec_ref: str) -> str:
    """The public page of the spec, at the section's heading where that page has anchors.

    specRef is ``<spec file>#<section>``; the file name is ours and opens nothing a user has.
    """
    ref_protocol, section = split_spec_ref(spec_ref)
    return public_spec_url(protocol or ref_protocol, section) or public_spec_url(ref_protocol, section) or ""


def profile_href(protocol: str, profiles_dir: Path | None, out_dir: Path) -> str:
    """Our profile page for the protocol, relative to the report when the docs are at hand."""
    if profiles_dir is not None and (profiles_dir / f"{protocol}.md").is_file():
        return os.path.relpath(profiles_dir / f"{protocol}.md", out_dir)
    return ""


def wirelog_href(run_dir: str, wirelog: str | None, out_dir: Path) -> str | None:
    if not wirelog or "://" in run_dir:
        return None
    return os.path.relpath(Path(run_dir) / wirelog, out_dir)


def protocol_matrices(
    rows: Iterable[Any], profiles_dir: Path | None, out_dir: Path, column_notes: dict[tuple[str, str], str] | None = None
) -> list[ProtocolMatrix]:
    """rows: matrix cells with attribute access (Spark rows); column_notes: (protocol, implementation) -> text
    shown under the column heading."""
    by_protocol: dict[str, ProtocolMatrix] = {}
    case_rows: dict[str, dict[tuple[str, str], CaseRow]] = {}
    for r in rows:
        matrix = by_protocol.setdefault(
            r.protocol,
            ProtocolMatrix(
                r.protocol, [], [], {},
                spec_url=public_spec_url(r.protocol) or "",
                profile_href=profile_href(r.protocol, profiles_dir, out_dir),
            ),
        )
        row = CaseRow(r.family, r.case, r.transport, r.requirement)
        case_rows.setdefault(r.protocol, {}).setdefault((r.case, r.transport), row)
        matrix.cells[(r.implementation, r.case, r.transport)] = Cell(
            grade=r.grade,
            spec_ref=r.specRef,
            spec=r.spec,
            message=r.message,
            spec_href=spec_href(r.protocol, r.specRef),
            wirelog_href=wirelog_href(r.runDir, r.wirelog, out_dir),
            attachments=r.attachments,
        )
    for protocol, matrix in by_protocol.items():
        matrix.implementations = sorted({impl for impl, _, _ in matrix.cells})
        matrix.column_notes = {i: (column_notes or {}).get((protocol, i), "") for i in matrix.implementations}
        matrix.cases = sorted(case_rows[protocol].values(), key=lambda c: (c.family, c.case, c.transport))
    return [by_protocol[p] for p in sorted(by_protocol)]
