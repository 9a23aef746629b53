#!/bin/sh
# The rsocket-js 1.0.0-alpha.3 peer (rsocket_js1_peer.js) (thirdparty/) behind the image contract (docs/image-contract.md): RSocket, both roles.
# Server: the profile's test service on 127.0.0.1:PORT over TRANSPORT (tcp or ws).
# Client: TESTCASE (request-response, stream, channel, fnf, metadata-push, fragmented) against SERVER_URL.
# RSOCKET_RESUME_MS (optional, server): the library's server resumption on, a session kept that long
# without a connection (the rsocket-js-1.0-resume image sets it; docs/image-contract.md).
set -eu

UNSUPPORTED=127
say() { echo "rsocket-js-1.0 entrypoint: $*"; }

PROTOCOL="${PROTOCOL:-rsocket}"
ROLE="${ROLE:-server}"

if [ "$PROTOCOL" != rsocket ]; then
    say "this image implements rsocket, not $PROTOCOL"
    exit "$UNSUPPORTED"
fi
# A missing interpreter would make sh answer 127 by itself and pass for "unsupported".
if ! command -v node >/dev/null 2>&1; then
    say "node is missing from this image"
    exit 1
fi

case "$ROLE" in
server)
    if [ -z "${PORT:-}" ]; then
        say "ROLE=server needs PORT"
        exit 2
    fi
    case "${TRANSPORT:-tcp}" in
    tcp|ws) ;;
    *) say "TRANSPORT must be tcp or ws, not $TRANSPORT"; exit 2 ;;
    esac
    if [ -n "${RSOCKET_RESUME_MS:-}" ]; then
        say "ROLE=server PORT=$PORT TRANSPORT=${TRANSPORT:-tcp} RSOCKET_RESUME_MS=$RSOCKET_RESUME_MS"
        exec node /opt/peer/thirdparty/rsocket_js1_peer.js server --transport "${TRANSPORT:-tcp}" --port "$PORT" \
            --resume "$RSOCKET_RESUME_MS"
    fi
    say "ROLE=server PORT=$PORT TRANSPORT=${TRANSPORT:-tcp}"
    exec node /opt/peer/thirdparty/rsocket_js1_peer.js server --transport "${TRANSPORT:-tcp}" --port "$PORT"
    ;;
client)
    if [ -z "${TESTCASE:-}" ]; then
        say "ROLE=client needs TESTCASE"
        exit 2
    fi
    SERVER_URL="${SERVER_URL:-tcp://127.0.0.1:${PORT:-0}}"
    say "ROLE=client TESTCASE=$TESTCASE SERVER_URL=$SERVER_URL"
    exec node /opt/peer/thirdparty/rsocket_js1_peer.js client --url "$SERVER_URL" --testcase "$TESTCASE"
    ;;
*)
    say "ROLE must be server or client, not $ROLE"
    exit 2
    ;;
esac
