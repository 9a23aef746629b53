"""The implementation images `conformance matrix` runs, and what each pair of image and protocol runs.

An implementation image declares itself with labels (docs/image-contract.md):
conformance.protocols (required for discovery), conformance.roles (default
"server,client") and conformance.params.<protocol> (its timers, NAME=MS,...).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import docker
from docker.errors import ImageNotFound

from conformance.images.layout import LABEL_KIND, LABEL_PARAMS_PREFIX, LABEL_PROTOCOLS, LABEL_ROLES

ROLES = ("server", "client")
# conformance run: container start-up and the 127 check, on top of the cases' own deadlines.
PAIR_OVERHEAD_SECONDS = 120


class SelectionError(ValueError):
    """An --image that cannot be run: not in the engine, or no protocols declared."""


@dataclass(frozen=True)
class Implementation:
    name: str  # the image's repository: the implementation name in the records
    image: str  # repository:tag, as given to --target docker:
    kind: str  # reference, thirdparty, or external
    protocols: tuple[str, ...]
    roles: tuple[str, ...] = ROLES
    params: dict[str, dict[str, int]] = field(default_factory=dict)  # protocol -> declared timers

    def as_json(self) -> dict:
        return {"name": self.name, "image": self.image, "kind": self.kind, "protocols": list(self.protocols),
                "roles": list(self.roles), "params": self.params}


def _split(value: str | None) -> tuple[str, ...]:
    return tuple(part.strip() for part in (value or "").split(",") if part.strip())


def _params(labels: dict[str, str]) -> dict[str, dict[str, int]]:
    found: dict[str, dict[str, int]] = {}
    for key, value in labels.items():
        if key.startswith(LABEL_PARAMS_PREFIX):
            pairs = (item.partition("=") for item in _split(value))
            found[key[len(LABEL_PARAMS_PREFIX):]] = {k.strip(): int(v) for k, _, v in pairs if v.strip().isdigit()}
    return found


def from_labels(name: str, image: str, labels: dict[str, str], protocols: tuple[str, ...] = ()) -> Implementation:
    roles = tuple(r for r in _split(labels.get(LABEL_ROLES)) if r in ROLES) or ROLES
    return Implementation(name=name, image=image, kind=labels.get(LABEL_KIND, "external"),
                          protocols=protocols or _split(labels.get(LABEL_PROTOCOLS)), roles=roles,
                          params=_params(labels))


def discover(client: docker.DockerClient) -> list[Implementation]:
    """Every local image labelled conformance.protocols: per repository its :latest tag, else its newest tag."""
    newest: dict[str, tuple[str, str, dict[str, str]]] = {}
    for image in client.images.list(filters={"label": LABEL_PROTOCOLS}):
        created = str(image.attrs.get("Created", ""))
        for tag in image.tags:
            repository, _, version = tag.rpartition(":")
            held = newest.get(repository)
            if held is None or version == "latest" or (not held[1].endswith(":latest") and created > held[0]):
                newest[repository] = (created, tag, image.labels)
    return sorted((from_labels(repo, tag, labels) for repo, (_, tag, labels) in newest.items()),
                  key=lambda impl: (impl.kind != "reference", impl.name))


def explicit(client: docker.DockerClient, spec: str) -> Implementation:
    """--image IMAGE or --image IMAGE=P1,P2 (protocols for an image without the label)."""
    image, _, protocols = spec.partition("=")
    try:
        labels = client.images.get(image).labels or {}
    except ImageNotFound as exc:
        raise SelectionError(f"image {image} is not in the local engine (images are never pulled)") from exc
    name = image.rsplit("/", 1)[-1].split(":", 1)[0]
    impl = from_labels(name, image, labels, _split(protocols))
    if not impl.protocols:
        raise SelectionError(f"image {image} declares no protocols: label it {LABEL_PROTOCOLS}=P1,P2 "
                             f"or give --image {image}=P1,P2")
    return impl


def role_filter(case_ids: dict[str, str], roles: tuple[str, ...]) -> str | None:
    """A pytest -k expression keeping only the cases of ROLES (None: keep all); '' when none remain."""
    dropped = sorted(case for case, role in case_ids.items() if role not in roles)
    kept = sorted(case for case, role in case_ids.items() if role in roles)
    if not dropped:
        return None
    if not kept:
        return ""
    # "ID[" matches the item names "ID[tcp]", "ID[ws]" and no other case whose ID merely starts with ID.
    terms = dropped if len(dropped) <= len(kept) else kept
    joined = " or ".join(f"{case}[" for case in terms)
    return f"not ({joined})" if terms is dropped else f"({joined})"


def cases_of(protocol: str) -> tuple[dict[str, str], dict[str, float]]:
    """(case id -> role, role -> seconds of case deadlines, every transport counted) from the scenario files."""
    from conformance.paths import scenarios_dir
    from conformance.protocols import adapter_for
    from conformance.scenario.loader import BrokenCase, ScenarioError, load_file
    from conformance.scenario.values import ValueError_, millis

    adapter = adapter_for(protocol)
    roles: dict[str, str] = {}
    budget = dict.fromkeys(ROLES, 0.0)
    for path in sorted((scenarios_dir() / protocol).glob("*.yaml")):
        try:
            loaded = load_file(path, adapter.frame_check)
        except ScenarioError:
            continue  # the run reports it as an ERROR
        for case in loaded.cases:
            if isinstance(case, BrokenCase):
                continue
            roles[case.id] = case.role
            try:
                timeout = millis(case.timeout_ms, adapter.params)
            except ValueError_:
                timeout = 15000  # the run reports the broken case
            budget[case.role] = budget.get(case.role, 0.0) + timeout / 1000 * len(case.transports or adapter.transports)
    return roles, budget


def suite_params(impl: Implementation, protocol: str) -> dict[str, int]:
    """The adapter's defaults for an external target, overridden by the timers the image declares."""
    from conformance.protocols import adapter_for
    return {**adapter_for(protocol).params, **impl.params.get(protocol, {})}
