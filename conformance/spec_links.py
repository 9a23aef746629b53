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


@dataclass(frozen=True)
class PublicSpec:
    url: str
    # True where the public page gives each heading a GitHub-style anchor (lower case, hyphens).
    anchors: bool


PUBLIC_SPECS: dict[str, PublicSpec] = {
    # The article has no heading anchors.
    "stmp": PublicSpec(
        "https://topic.alibabacloud.com/a/a-super-thin-long-connection-message-protocol-based-on-tcpfont-classtopic"
        "-s-color00c1dewebsocketsfont_1_38_30919814.html",
        anchors=False,
    ),
    "micromessage2": PublicSpec(
        "https://github.com/Teino1978-Corp/Teino1978-Corp-MicroMsg2.md/blob/HEAD/MicroMsg2.md", anchors=True
    ),
    "rsio": PublicSpec(
        "https://github.com/reactive-streams/reactive-streams-io/blob/master/NETWORK_PROTOCOL.md", anchors=True
    ),
    "mc0": PublicSpec(
        "https://github.com/puppetlabs/mcollective-zeromq-connector/blob/master/PROTOCOL.md", anchors=True
    ),
    "mtl": PublicSpec("https://rfc.zeromq.org/spec/11/", anchors=True),
}

# Scenario spec_file names, for records that carry only a specRef.
SPEC_FILE_PROTOCOL = {
    "stmp.txt": "stmp",
    "micromessage2.txt": "micromessage2",
    "rsio-draft.txt": "rsio",
    "mc0-0.3.txt": "mc0",
    "mtl-rfc11.txt": "mtl",
}


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
    return SPEC_FILE_PROTOCOL.get(Path(file_part).name, ""), section


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
