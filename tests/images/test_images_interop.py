"""`conformance interop`: verdicts from exit codes and wire violations, the client x server table,
and (with an engine) the RSocket matrix over the reference and the three third-party peers, and one
pair each of mc0 and MTL with the pyzmq peers."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from conformance.cli import main as cli_main
from conformance.images.interop import case_verdict, implementations, pair_verdict, run_interop
from conformance.images.matrix_report import interop_cell, interop_html, print_interop_table
from conformance.images.thirdparty import PEERS

# the interop matrix's RSocket images (not rsocket-js-1.0-resume, a variant without conformance.protocols)
RSOCKET_PEERS = [peer.name for peer in PEERS if "rsocket" in peer.protocols and peer.listed]


def test_case_verdict_names_the_side_whose_frames_broke_a_rule() -> None:
    assert case_verdict(0, set()) == "passed"
    assert case_verdict(127, set()) == "unsupported"
    assert case_verdict(1, set()) == "failed"
    assert case_verdict(0, {"server"}) == "server-broke-spec"  # a client may pass its checks on a bad wire
    assert case_verdict(127, {"client"}) == "client-broke-spec"  # 127 after a bad frame is no excuse
    assert case_verdict(1, {"client", "server"}) == "both-broke-spec"
    assert case_verdict(None, set(), "did not exit") == "error"


def test_pair_verdict_is_the_worst_case() -> None:
    assert pair_verdict(["passed", "unsupported"]) == "passed"
    assert pair_verdict(["unsupported", "unsupported"]) == "unsupported"
    assert pair_verdict(["passed", "failed", "client-broke-spec"]) == "client-broke-spec"
    assert pair_verdict(["server-broke-spec", "client-broke-spec"]) == "both-broke-spec"
    assert pair_verdict(["failed", "error"]) == "error"


DOCUMENT = {
    "protocol": "rsocket", "transport": "tcp", "cases": ["a", "b"], "clients": ["c1", "c2"], "servers": ["s1"],
    "pairs": [
        {"client": "c1", "server": "s1", "verdict": "passed", "cases": [
            {"case": "a", "verdict": "passed", "violations": [], "detail": "", "wire": "wire/c1--s1/a.log"},
            {"case": "b", "verdict": "unsupported", "violations": [], "detail": "", "wire": "wire/c1--s1/b.log"}]},
        {"client": "c2", "server": "s1", "verdict": "client-broke-spec", "cases": [
            {"case": "a", "verdict": "client-broke-spec", "violations": ["client broke <rule> (frame 1)"],
             "detail": "", "wire": "wire/c2--s1/a.log"},
            {"case": "b", "verdict": "passed", "violations": [], "detail": "", "wire": "wire/c2--s1/b.log"}]},
    ]}


def test_interop_table_text_and_html(capsys: pytest.CaptureFixture[str]) -> None:
    assert interop_cell(DOCUMENT["pairs"][0]) == "passed 1/1"
    assert interop_cell(DOCUMENT["pairs"][1]) == "CLIENT-BROKE-SPEC 1/2"
    print_interop_table(DOCUMENT, Path("out"))
    text = capsys.readouterr().out
    assert "client \\ server" in text and "c2" in text and "client broke <rule> (frame 1)" in text
    page = interop_html(DOCUMENT)
    assert page.count("<tr>") == 3  # the header row and one row per client
    assert "data-verdict='client-broke-spec'" in page and "href='wire/c2--s1/a.log'" in page
    assert "&lt;rule&gt;" in page and "<rule>" not in page  # escaped


def test_interop_command_refuses_a_protocol_without_a_matrix(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli_main(["interop", "stmp"]) == 2
    assert "no interop matrix for stmp" in capsys.readouterr().err


def test_a_missing_role_is_said_in_its_cells() -> None:
    pair = {"client": "pyzmq-mc0", "server": "s1", "verdict": "no-client", "cases": [],
            "detail": "no client in this implementation"}
    document = dict(DOCUMENT, clients=["c1", "pyzmq-mc0"], pairs=DOCUMENT["pairs"][:1] + [pair])
    assert interop_cell(pair) == "no client in this implementation"
    assert "no client in this implementation" in interop_html(document)


def test_interop_without_a_protocol_runs_those_with_two_implementations(
        monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    from conformance.images import interop
    from conformance.images.implementations import Implementation
    seen = []

    def only_the_reference(protocol: str, images: list[str]) -> list[Implementation]:
        seen.append(protocol)
        return [Implementation(name="reference", image="", kind="reference", protocols=(protocol,))]

    monkeypatch.setattr(interop, "implementations", only_the_reference)
    assert cli_main(["interop", "--out", str(tmp_path)]) == 2  # nothing had two implementations
    assert seen == ["rsocket", "mc0", "mtl"]
    assert capsys.readouterr().out.count("skipped, one implementation only") == 3
    assert not list(tmp_path.iterdir())


@pytest.mark.docker
@pytest.mark.slow
def test_rsocket_interop_fills_every_cell(rsocket_images: dict[str, str], tmp_path: Path) -> None:
    impls = implementations("rsocket", [rsocket_images[name] for name in RSOCKET_PEERS])
    names = [impl.name for impl in impls]
    assert names[0] == "reference" and sorted(names[1:]) == sorted(RSOCKET_PEERS)
    document = run_interop("rsocket", impls, tmp_path, ["metadata-push", "channel", "fragmented"])
    cells = {(p["client"], p["server"]): {c["case"]: c["verdict"] for c in p["cases"]} for p in document["pairs"]}
    assert len(cells) == 16 and all(len(v) == 3 for v in cells.values())
    assert not [key for key, cases in cells.items() if "error" in cases.values()]
    # the reference and rsocket-py agree with each other and themselves
    for pair in [("reference", "reference"), ("reference", "rsocket-py"), ("rsocket-py", "reference"),
                 ("rsocket-py", "rsocket-py")]:
        assert {case: cells[pair][case] for case in ("metadata-push", "fragmented")} == {
            "metadata-push": "passed", "fragmented": "passed"}, pair
    # F-PY-1: rsocket-py's empty channel item (PAYLOAD with neither N nor C) is named on its side
    assert cells[("reference", "rsocket-py")]["channel"] == "server-broke-spec"
    assert cells[("rsocket-py", "reference")]["channel"] == "client-broke-spec"
    assert cells[("reference", "reference")]["channel"] == "passed"
    # F-JS0-2: the 0.0 client's METADATA_PUSH (M clear) is its fault, whatever the server
    for server in names:
        assert cells[("rsocket-js-0.0", server)]["metadata-push"] == "client-broke-spec"
    # F-JS0-1: the 0.0 server drops metadata: no frame breaks a rule, the client's check fails
    assert cells[("reference", "rsocket-js-0.0")]["fragmented"] == "failed"
    # F-JS1-1: the 1.0 server drops the connection on METADATA_PUSH and keeps nothing; its client has none (127)
    assert cells[("reference", "rsocket-js-1.0")]["metadata-push"] == "failed"
    assert cells[("rsocket-js-1.0", "reference")]["metadata-push"] == "unsupported"
    pair = next(p for p in document["pairs"] if (p["client"], p["server"]) == ("reference", "rsocket-js-1.0"))
    lost = next(c for c in pair["cases"] if c["case"] == "metadata-push")
    assert lost["detail"].startswith("the server did not keep what the client sent")
    wire = (tmp_path / lost["wire"]).read_text()
    # every frame the server was sent (SETUP, METADATA_PUSH with M set) was valid; the log says what was lost
    assert lost["violations"] == [] and "bytes[" in wire and "server check: the server did not keep" in wire
    saved = json.loads((tmp_path / "interop.json").read_text())
    assert saved["clients"] == names and (tmp_path / "interop.html").is_file()


@pytest.mark.docker
def test_mc0_interop_reference_client_against_the_pyzmq_broker(pyzmq_images: dict[str, str],
                                                                tmp_path: Path) -> None:
    impls = implementations("mc0", [pyzmq_images["pyzmq-mc0"]])
    document = run_interop("mc0", impls, tmp_path)
    pairs = {(p["client"], p["server"]): p for p in document["pairs"]}
    assert interop_cell(pairs[("pyzmq-mc0", "reference")]) == "no client in this implementation"
    pair = pairs[("reference", "pyzmq-mc0")]
    assert pair["verdict"] == "passed", pair
    case = pair["cases"][0]
    # libzmq speaks CURVE: the content is encrypted and the case says so; its greeting's as-server 0 is noted
    assert any("encrypted" in note for note in case["notes"]) and any("as-server 0" in n for n in case["notes"])
    wire = (tmp_path / case["wire"]).read_text()
    assert "WELCOME" in wire and "violation:" not in wire


@pytest.mark.docker
def test_mtl_interop_pyzmq_client_against_the_reference_server(pyzmq_images: dict[str, str],
                                                               tmp_path: Path) -> None:
    impls = implementations("mtl", [pyzmq_images["pyzmq-mtl"]])
    document = run_interop("mtl", impls, tmp_path, ["test-profile", "test-and-confirm"])
    pairs = {(p["client"], p["server"]): p for p in document["pairs"]}
    assert interop_cell(pairs[("reference", "pyzmq-mtl")]) == "no server in this implementation"
    cases = {c["case"]: c for c in pairs[("pyzmq-mtl", "reference")]["cases"]}
    assert cases["test-profile"]["verdict"] == "unsupported"  # the pyzmq client runs its one case only
    assert cases["test-and-confirm"]["verdict"] == "passed", cases
    wire = (tmp_path / cases["test-and-confirm"]["wire"]).read_text()
    # the control connection went through the monitor, message by message, and so did the data connections
    assert "violation:" not in wire and re.search(r"monitor: read \d+ frames, [1-9]\d* messages", wire)
    assert re.search(r"monitor: [1-9]\d* data connections, [1-9]\d* of those frames theirs", wire), wire[-3000:]
    assert "the 202 reply's data port" in wire
