"""`conformance images list`: the images this project built, found by their label."""

from __future__ import annotations

import docker

from conformance.images.layout import LABEL_HASH, LABEL_KIND, LABEL_PROTOCOL


def project_images(client: docker.DockerClient) -> list[dict[str, str]]:
    rows = []
    for image in client.images.list(filters={"label": LABEL_HASH}):
        labels = image.labels
        rows.append({
            "tags": " ".join(sorted(image.tags)) or image.short_id,
            "kind": labels.get(LABEL_KIND, "?"),
            "protocol": labels.get(LABEL_PROTOCOL, "-"),
            "size_mb": f"{image.attrs.get('Size', 0) / 1e6:.0f}",
            "created": str(image.attrs.get("Created", ""))[:19],
        })
    return sorted(rows, key=lambda row: (row["kind"], row["protocol"], row["created"]))
