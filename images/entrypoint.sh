#!/bin/sh
# Maps the image contract (docs/image-contract.md) onto the `conformance serve` CLI
# of the reference implementation. IMAGE_PROTOCOL is fixed when the image is built.
set -eu

UNSUPPORTED=127

say() { echo "entrypoint: $*"; }

PROTOCOL="${PROTOCOL:-$IMAGE_PROTOCOL}"
ROLE="${ROLE:-server}"

if [ "$PROTOCOL" != "$IMAGE_PROTOCOL" ]; then
    say "this image implements $IMAGE_PROTOCOL, not $PROTOCOL"
    exit "$UNSUPPORTED"
fi

# A missing CLI would make sh answer 127 by itself and pass for "unsupported".
if ! command -v conformance >/dev/null 2>&1; then
    say "the conformance CLI is not installed in this image"
    exit 1
fi

# Key material: CURVE_SECRET_FILE becomes --curve-secret; the others reach the
# reference implementation as environment variables. A path that does not exist
# is a mistake in the run, not an unsupported case.
for var in CURVE_SECRET_FILE CURVE_PUBLIC_FILE SASL_USERS_FILE; do
    eval "path=\${$var:-}"
    if [ -n "$path" ] && [ ! -r "$path" ]; then
        say "$var=$path is not a readable file inside the container"
        exit 2
    fi
done

case "$ROLE" in
server)
    if [ -z "${PORT:-}" ]; then
        say "ROLE=server needs PORT"
        exit 2
    fi
    set -- serve "$PROTOCOL" --host 127.0.0.1 --port "$PORT"
    if [ -n "${TRANSPORT:-}" ]; then
        set -- "$@" --transport "$TRANSPORT"
    fi
    if [ -n "${CURVE_SECRET_FILE:-}" ]; then
        set -- "$@" --curve-secret "$CURVE_SECRET_FILE"
    fi
    case "${ZMTP_MECHANISM:-CURVE}" in
    CURVE) ;;
    NULL) set -- "$@" --null ;;  # the reference broker then accepts NULL clients beside CURVE ones
    *) say "ZMTP_MECHANISM must be CURVE or NULL, not $ZMTP_MECHANISM"; exit 2 ;;
    esac
    say "ROLE=server PROTOCOL=$PROTOCOL PORT=$PORT TRANSPORT=${TRANSPORT:-tcp}"
    exec conformance "$@"
    ;;
client)
    if [ -z "${TESTCASE:-}" ]; then
        say "ROLE=client needs TESTCASE"
        exit 2
    fi
    SERVER_URL="${SERVER_URL:-tcp://127.0.0.1:${PORT:-0}}"
    say "ROLE=client PROTOCOL=$PROTOCOL TESTCASE=$TESTCASE SERVER_URL=$SERVER_URL"
    exec conformance serve "$PROTOCOL" --role client --connect "$SERVER_URL" --testcase "$TESTCASE"
    ;;
*)
    say "ROLE must be server or client, not $ROLE"
    exit 2
    ;;
esac
