"""`--target docker:IMAGE`: an implementation image following docs/image-contract.md.

The container is started once per run and transport (host networking, the
server on 127.0.0.1:PORT), after the image has shown it answers 127 to a
test case it cannot know.  Its log is attached to every case that did not pass.
"""

from __future__ import annotations

import asyncio
import contextlib

from conformance.extras import missing_extra
from conformance.target_base import TCP_CARRIED, ClientLauncher, Target, TargetError


class DockerTarget(Target):
    def __init__(self, image: str, name: str | None = None) -> None:
        try:
            import conformance.images.container  # noqa: F401  (checked here: a usage error, not a case ERROR)
        except ModuleNotFoundError as exc:
            error = missing_extra(exc, "images", "a docker:IMAGE target")
            if error is None:
                raise
            raise TargetError(str(error)) from None
        self.spec = f"docker:{image}"
        self.image = image
        self.name = name or image.rsplit("/", 1)[-1].split(":", 1)[0]
        self._containers: dict[tuple[str, str], object] = {}
        self._trusted: set[str] = set()

    def version(self) -> str | None:
        """The image's org.opencontainers.image.version label (docs/image-contract.md), if any."""
        from conformance.images.engine import docker_client
        from conformance.images.layout import LABEL_VERSION
        try:
            client = docker_client()
            try:
                return (client.images.get(self.image).labels or {}).get(LABEL_VERSION) or None
            finally:
                client.close()
        except Exception:  # no engine or no image: the run reports that itself; the version stays unknown
            return None

    def _trust(self, protocol: str) -> None:
        from conformance.images.container import check_unsupported_answer
        if protocol not in self._trusted:
            try:
                check_unsupported_answer(self.image, protocol)
            except Exception as exc:  # the image's own failure, reported for every case
                raise TargetError(f"image {self.image} is not trusted for {protocol}: {exc}") from exc
            self._trusted.add(protocol)

    def endpoint(self, protocol: str, transport: str) -> str | None:
        from conformance.images.container import ContainerTarget
        transport = TCP_CARRIED.get(transport, transport)
        if transport not in ("tcp", "ws"):
            return None
        key = (protocol, transport)
        if key not in self._containers:
            self._trust(protocol)
            container = ContainerTarget(self.image, protocol, transport=transport)
            try:
                container.__enter__()
            except Exception as exc:
                raise TargetError(f"image {self.image} did not come up for {protocol}/{transport}: {exc}") from exc
            self._containers[key] = container
        return self._containers[key].url

    def own_client_launcher(self, protocol: str) -> ClientLauncher:
        from conformance.images.container import POLL_SECONDS, start_client
        image = self.image

        async def launch(testcase: str, url: str) -> int:
            starting = asyncio.ensure_future(asyncio.to_thread(start_client, image, protocol, testcase, url))
            try:
                run = await asyncio.shield(starting)
            except asyncio.CancelledError:
                # the case ended while its container was being started: the start's thread goes on
                # and the container exists once it returns, so it is removed then, not left running
                with contextlib.suppress(Exception):
                    await asyncio.to_thread((await starting).remove)
                raise
            try:
                # polled here rather than waited on in a thread: when the case is over (or its
                # deadline passed) the runner cancels this, and the container goes at once
                while (code := await asyncio.to_thread(run.exit_code)) is None:
                    await asyncio.sleep(POLL_SECONDS)
                return code
            finally:
                await asyncio.to_thread(run.remove)
        return launch

    def logs(self) -> str:
        return "\n".join(f"--- container {p}/{t} ---\n{c.logs()[-20000:]}" for (p, t), c in self._containers.items())

    def close(self) -> None:
        for container in self._containers.values():
            try:
                container.__exit__(None, None, None)
            except Exception:  # stopping is best effort at the end of the run
                pass
