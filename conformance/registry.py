"""The protocols this suite grades: the one list every central place reads.

Adding a protocol means one entry here (docs/adding-a-protocol.md lists the per-protocol
modules and files it needs beside it).  What reads this list:

* ``conformance.protocols.KNOWN`` (adapters, ``conformance run/cases/serve``, the pytest plugin);
* ``conformance.spec_links`` (public spec pages and scenario ``spec_file`` names, for reports);
* ``conformance.selftest.catalog.MODULES`` (one-bug targets, ``conformance selftest``);
* ``conformance.images.reference.REFERENCE_TIMERS`` (the timers a reference image is labelled with);
* the scenario loader's ``protocol`` enum; the JSON schemas in conformance/schemas carry the same
  names as a static copy for readers outside Python, and a test keeps them equal to this list.

Nothing here imports an adapter or ``reference_impl``: fuzz workers and the image builder read it
before any code under test is loaded.
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class ProtocolInfo:
    name: str  # the protocol's id: scenario files, records, `conformance run NAME`
    label: str  # how README tables and summaries name it
    spec_file: str  # the scenarios' spec_file (a text on the private shelf, never shipped)
    public_spec: str  # the spec's public page, cited by reports
    anchors: bool  # True where that page gives each heading a GitHub-style anchor
    selftest: str | None = None  # module under conformance.selftest with SERVERS and CLIENTS
    #: the timers of `conformance serve NAME` with its defaults, told to the suite through the
    #: reference image's labels (conformance.params.NAME)
    reference_timers: dict[str, int] = field(default_factory=dict)


PROTOCOLS: tuple[ProtocolInfo, ...] = (
    ProtocolInfo(
        "stmp", "STMP", "stmp.txt",
        # the article has no heading anchors
        "https://topic.alibabacloud.com/a/a-super-thin-long-connection-message-protocol-based-on-tcpfont-classtopic"
        "-s-color00c1dewebsocketsfont_1_38_30919814.html",
        anchors=False, selftest="stmp_bugs",
        # request_timeout_ms times the client role's request-timeout case (no server case uses it)
        reference_timers={"heartbeat_interval_ms": 5000, "heartbeat_timeout_ms": 15000, "request_timeout_ms": 2000},
    ),
    ProtocolInfo(
        "micromessage2", "Micromessage2", "micromessage2.txt",
        "https://github.com/Teino1978-Corp/Teino1978-Corp-MicroMsg2.md/blob/HEAD/MicroMsg2.md",
        anchors=True, selftest="micromessage2_bugs", reference_timers={"read_timeout_ms": 5000},
    ),
    ProtocolInfo(
        "rsio", "rsio", "rsio-draft.txt",
        "https://github.com/reactive-streams/reactive-streams-io/blob/master/NETWORK_PROTOCOL.md",
        anchors=True, selftest="rsio_bugs",
    ),
    ProtocolInfo(
        "mc0", "mc0", "mc0-0.3.txt",
        "https://github.com/puppetlabs/mcollective-zeromq-connector/blob/master/PROTOCOL.md",
        anchors=True, selftest="mc0_bugs",
    ),
    ProtocolInfo(
        "mtl", "11/MTL", "mtl-rfc11.txt", "https://rfc.zeromq.org/spec/11/",
        anchors=True, selftest="mtl_bugs",
        reference_timers={"heartbeat_interval_ms": 5000, "heartbeat_timeout_ms": 15000, "redeliver_ms": 2000},
    ),
    ProtocolInfo(
        "rsocket", "RSocket", "rsocket/Protocol.md",
        "https://github.com/rsocket/rsocket/blob/master/Protocol.md",
        anchors=True, selftest="rsocket_bugs",
    ),
)

NAMES: tuple[str, ...] = tuple(p.name for p in PROTOCOLS)
BY_NAME: dict[str, ProtocolInfo] = {p.name: p for p in PROTOCOLS}
