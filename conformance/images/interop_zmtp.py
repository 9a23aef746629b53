"""The ZMTP protocols of `conformance interop`: mc0 and MTL, each with its wire monitor.

mc0: the reference connector plays one client case, ``pubsub`` (CURVE with the suite's test
keys: CONNECT, SUB a topic, PUT to it, the MESSAGE comes back with the body), against the
reference broker and the pyzmq broker (a server only).  MTL: the reference client's cases
(``test-profile``, ``scram``) and the pyzmq client's (``test-and-confirm``) against the
reference server (pyzmq-mtl is a client only); a client answers 127 to the other's cases.  The
MTL monitor (conformance/images/interop_mtl.py) sees the control connection and every data
connection: the proxy rewrites the port each 202 reply names to a proxy of its own in front of
the server's data port, and checks each data connection with the data codec and its order rules.
"""

from __future__ import annotations

import asyncio
import contextlib
import io
from typing import Callable

from conformance.images.interop_protocol import ConnectionMonitors, InteropProtocol

MC0_TOPIC = b"interop"
MC0_BODY = b"hello across implementations"


async def _no_server_check(case: str, url: str) -> None:
    return None  # every client case reads back what it sent through the server itself


async def mc0_pubsub(url: str, log: Callable[[str], None]) -> int:
    from reference_impl.common.errors import CodecError
    from reference_impl.mc0 import codec
    from reference_impl.mc0.client import Mc0Client, RequestFailed
    try:
        async with asyncio.timeout(30):
            async with await Mc0Client.connect(url) as client:
                await client.hello(ttl_ms=10000)
                await client.subscribe(MC0_TOPIC)
                await client.put(MC0_TOPIC, [MC0_BODY])
                while (message := await client.recv()).verb == codec.NOOP:
                    pass
                if message.verb != codec.MESSAGE or message.positional != (MC0_BODY,) \
                        or message.header(codec.TOPIC) != MC0_TOPIC:
                    log(f"mc0 client pubsub: FAILED: expected MESSAGE TOPIC {MC0_TOPIC!r} '' {MC0_BODY!r}, "
                        f"got {message}")
                    return 1
    except (RequestFailed, CodecError, TimeoutError, ConnectionError, OSError) as exc:
        log(f"mc0 client pubsub: FAILED: {type(exc).__name__}: {exc}")
        return 1
    log("mc0 client pubsub: OK")
    return 0


async def _mc0_client(case: str, url: str, log: Callable[[str], None]) -> int:
    if case != "pubsub":
        return 127
    return await mc0_pubsub(url, log)


def mc0() -> InteropProtocol:
    from reference_impl.mc0.monitor import Mc0Monitor, Side
    from reference_impl.mc0.server import start_server
    return InteropProtocol(cases=("pubsub",), start_reference_server=start_server, run_reference_client=_mc0_client,
                           monitor=lambda: ConnectionMonitors(Mc0Monitor), side_of=Side, server_check=_no_server_check)


async def _mtl_client(case: str, url: str, log: Callable[[str], None]) -> int:
    from reference_impl.mtl.client import CLIENT_TESTCASES, run_client_testcase
    if case not in CLIENT_TESTCASES:
        return 127
    said = io.StringIO()
    with contextlib.redirect_stderr(said):  # where it says what failed; one client runs at a time
        code = await run_client_testcase(url, case)
    for line in said.getvalue().splitlines():
        log(f"FAILED: {line}" if code == 1 else line)
    return code


def mtl() -> InteropProtocol:
    from reference_impl.mtl.client import CLIENT_TESTCASES
    from conformance.images.interop_mtl import MtlWireMonitor
    from reference_impl.mtl.monitor import Side
    from reference_impl.mtl.server import start_server
    return InteropProtocol(cases=(*CLIENT_TESTCASES, "test-and-confirm"), start_reference_server=start_server,
                           run_reference_client=_mtl_client, monitor=MtlWireMonitor, side_of=Side,
                           server_check=_no_server_check)
