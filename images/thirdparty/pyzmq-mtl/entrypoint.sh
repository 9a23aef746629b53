#!/bin/sh
# The pyzmq 11/MTL client (thirdparty/pyzmq_mtl_client.py) behind the image contract
# (docs/image-contract.md). Client role only, one test case: test-and-confirm (the
# test profile, then the confirm-test profile with a redelivery), against SERVER_URL.
set -eu

UNSUPPORTED=127
CLIENT=/opt/peer/thirdparty/pyzmq_mtl_client.py

say() { echo "pyzmq-mtl entrypoint: $*"; }

PROTOCOL="${PROTOCOL:-mtl}"
ROLE="${ROLE:-client}"

if [ "$PROTOCOL" != mtl ]; then
    say "this image implements mtl, not $PROTOCOL"
    exit "$UNSUPPORTED"
fi
if ! command -v python3 >/dev/null 2>&1 || [ ! -r "$CLIENT" ]; then
    say "python3 or $CLIENT is missing from this image"
    exit 1
fi

case "$ROLE" in
client)
    case "${TESTCASE:-}" in
    test-and-confirm) ;;
    "") say "ROLE=client needs TESTCASE"; exit 2 ;;
    *) say "unsupported test case ${TESTCASE} (this client runs test-and-confirm only)"; exit "$UNSUPPORTED" ;;
    esac
    SERVER_URL="${SERVER_URL:-tcp://127.0.0.1:${PORT:-0}}"
    say "ROLE=client PROTOCOL=mtl TESTCASE=$TESTCASE SERVER_URL=$SERVER_URL"
    exec python3 "$CLIENT" "$SERVER_URL"
    ;;
server)
    say "the pyzmq MTL client has no server role"
    exit "$UNSUPPORTED"
    ;;
*)
    say "ROLE must be server or client, not $ROLE"
    exit 2
    ;;
esac
