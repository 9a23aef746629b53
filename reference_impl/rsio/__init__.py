"""Reference implementation of rsio/0 (the Reactive Streams network protocol draft,
as pinned by docs/profiles/rsio.md): codec, sans-IO connection, test service, asyncio
server and client."""
