"""Where a case's spec sentence can be read by a user: the spec's public page and our profile page.

Scenarios name their spec by a short file name (``spec_file``) and a section heading; records carry
both as ``specRef`` (``stmp.txt#Message field definition``). Neither is a place a user can open, so
reports turn them into the public URL each docs/profiles page names at its top.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import quote

from conformance.registry import PROTOCOLS


@dataclass(frozen=True)
class PublicSpec:
    url: str
    # True where the public page gives each heading a GitHub-style anchor (lower case, hyphens).
    anchors: bool


#: the public spec page of each protocol, from the one registry (conformance/registry.py)
PUBLIC_SPECS: dict[str, PublicSpec] = {p.name: PublicSpec(p.public_spec, p.anchors) for p in PROTOCOLS}

# Scenario spec_file names, for records that carry only a specRef.
SPEC_FILE_PROTOCOL = {p.spec_file: p.name for p in PROTOCOLS}


def heading_anchor(section: str) -> str:
    """GitHub's and Hugo's heading ids: lower case, punctuation dropped, spaces to hyphens.

    Our sections name a sub-part as "Heading / part" (mc0's "CONNECT / TTL key"); only the heading
    has an anchor.
    """
    heading = section.split(" / ")[0].strip().lower()
    return re.sub(r"[^\w\- ]", "", heading).replace(" ", "-")


def split_spec_ref(spec_ref: str) -> tuple[str, str]:
    """``<spec file>#<section>`` -> (protocol or "", section)."""
    file_part, _, section = spec_ref.partition("#")
    # a spec_file may name a folder of the shelf (rsocket/Protocol.md); older records carry a path
    protocol = SPEC_FILE_PROTOCOL.get(file_part.replace("\\", "/")) or SPEC_FILE_PROTOCOL.get(Path(file_part).name, "")
    return protocol, section


def public_spec_url(protocol: str, section: str = "") -> str | None:
    spec = PUBLIC_SPECS.get(protocol)
    if spec is None:
        return None
    if section and spec.anchors:
        return f"{spec.url}#{quote(heading_anchor(section), safe='-_')}"
    return spec.url


def profile_page(protocol: str) -> str:
    """Our reading of the spec, relative to the project's root (or the bundled docs' parent)."""
    return f"docs/profiles/{protocol}.md"
