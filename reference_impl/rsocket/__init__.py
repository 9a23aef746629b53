"""Reference implementation of RSocket 1.0 (profile rsocket/1.0, docs/profiles/rsocket.md):
sans-IO codec, and in time the connection state machine, test service, server and client."""
