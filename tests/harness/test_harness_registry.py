"""One registry of protocols (conformance/registry.py): every central list reads it, and the two
JSON schemas, which cannot, carry exactly its names."""

from __future__ import annotations

import json
from pathlib import Path

from conformance.images.reference import REFERENCE_TIMERS
from conformance.protocols import KNOWN, adapter_for
from conformance.registry import NAMES, PROTOCOLS
from conformance.selftest.catalog import MODULES
from conformance.spec_links import PUBLIC_SPECS, SPEC_FILE_PROTOCOL, split_spec_ref

ROOT = Path(__file__).resolve().parents[2]


def test_every_central_list_is_the_registry() -> None:
    assert KNOWN == NAMES and len(set(NAMES)) == len(NAMES)
    assert set(PUBLIC_SPECS) == set(NAMES)
    assert set(SPEC_FILE_PROTOCOL.values()) == set(NAMES)
    assert set(MODULES) == {p.name for p in PROTOCOLS if p.selftest}
    assert set(REFERENCE_TIMERS) <= set(NAMES)
    for name in NAMES:
        assert adapter_for(name).name == name


def test_the_json_schemas_name_exactly_the_registry_protocols() -> None:
    scenario = json.loads((ROOT / "conformance" / "schemas" / "scenario.schema.json").read_text())
    record = json.loads((ROOT / "conformance" / "schemas" / "record.schema.json").read_text())
    assert scenario["properties"]["protocol"]["enum"] == list(NAMES)
    assert record["properties"]["protocol"]["enum"] == list(NAMES)


def test_a_spec_file_in_a_folder_resolves_to_its_protocol() -> None:
    assert split_spec_ref("rsocket/Protocol.md#Frame Header Format") == ("rsocket", "Frame Header Format")
    assert split_spec_ref("stmp.txt#Version negotiation") == ("stmp", "Version negotiation")


def test_adding_a_protocol_names_every_place() -> None:
    text = (ROOT / "docs" / "adding-a-protocol.md").read_text()
    for place in ("conformance/registry.py", "reference_impl/", "scenarios/", "vectors/", "docs/requirements/",
                  "conformance/protocols/", "conformance/vectors/", "fuzz/", "images/", "reports",
                  "conformance/selftest/", "docs/profiles/"):
        assert place in text, place
