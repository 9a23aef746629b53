#!/bin/sh
# The pyzmq mc0 broker (thirdparty/pyzmq_mc0_broker.py) behind the image contract
# (docs/image-contract.md). Server role only; CURVE with the suite's test server
# key unless CURVE_SECRET_FILE names another; ZMTP_MECHANISM=NULL for clear text.
set -eu

UNSUPPORTED=127
BROKER=/opt/peer/thirdparty/pyzmq_mc0_broker.py

say() { echo "pyzmq-mc0 entrypoint: $*"; }

PROTOCOL="${PROTOCOL:-mc0}"
ROLE="${ROLE:-server}"

if [ "$PROTOCOL" != mc0 ]; then
    say "this image implements mc0, not $PROTOCOL"
    exit "$UNSUPPORTED"
fi
# A missing interpreter would make sh answer 127 by itself and pass for "unsupported".
if ! command -v python3 >/dev/null 2>&1 || [ ! -r "$BROKER" ]; then
    say "python3 or $BROKER is missing from this image"
    exit 1
fi

case "$ROLE" in
server)
    if [ -z "${PORT:-}" ]; then
        say "ROLE=server needs PORT"
        exit 2
    fi
    if [ "${TRANSPORT:-tcp}" != tcp ]; then
        say "mc0 runs over ZMTP on TCP, not ${TRANSPORT}"
        exit 2
    fi
    set -- "$BROKER" --host 127.0.0.1 --port "$PORT"
    if [ -n "${CURVE_SECRET_FILE:-}" ]; then
        if [ ! -r "$CURVE_SECRET_FILE" ]; then
            say "CURVE_SECRET_FILE=$CURVE_SECRET_FILE is not a readable file inside the container"
            exit 2
        fi
        set -- "$@" --curve-secret "$CURVE_SECRET_FILE"
    fi
    case "${ZMTP_MECHANISM:-CURVE}" in
    CURVE) ;;
    NULL) set -- "$@" --null ;;  # NULL only: this broker then refuses CURVE clients
    *) say "ZMTP_MECHANISM must be CURVE or NULL, not $ZMTP_MECHANISM"; exit 2 ;;
    esac
    say "ROLE=server PROTOCOL=mc0 PORT=$PORT MECHANISM=${ZMTP_MECHANISM:-CURVE}"
    exec python3 "$@"
    ;;
client)
    say "the pyzmq mc0 broker has no client role (TESTCASE=${TESTCASE:-})"
    exit "$UNSUPPORTED"
    ;;
*)
    say "ROLE must be server or client, not $ROLE"
    exit 2
    ;;
esac
