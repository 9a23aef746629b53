#!/usr/bin/env bash
# Make a local docker engine answer, idempotently.
# The machine has only a docker client and no registry access: the engine runs
# without a bridge or iptables, so containers use host networking only.
set -euo pipefail

LOG_FILE="${DOCKERD_LOG:-/var/log/dockerd.log}"
WAIT_SECONDS="${DOCKERD_WAIT_SECONDS:-60}"

as_root() {
    if [ "$(id -u)" -eq 0 ]; then "$@"; else sudo "$@"; fi
}

missing=()
command -v dockerd >/dev/null 2>&1 || missing+=(docker.io)
command -v debootstrap >/dev/null 2>&1 || missing+=(debootstrap)
if [ "${#missing[@]}" -gt 0 ]; then
    echo "installing ${missing[*]}"
    as_root apt-get update -q
    as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -q "${missing[@]}"
fi

if docker info >/dev/null 2>&1; then
    echo "docker engine already answers"
    exit 0
fi

echo "starting dockerd (log: $LOG_FILE)"
as_root mkdir -p "$(dirname "$LOG_FILE")"
# setsid detaches dockerd from this script's session so it outlives the caller.
as_root setsid dockerd --bridge=none --iptables=false --ip6tables=false \
    >"$LOG_FILE" 2>&1 </dev/null &
echo "dockerd pid $!"

deadline=$((SECONDS + WAIT_SECONDS))
until docker info >/dev/null 2>&1; do
    if [ "$SECONDS" -ge "$deadline" ]; then
        echo "docker engine did not answer within ${WAIT_SECONDS}s; last log lines:" >&2
        tail -n 20 "$LOG_FILE" >&2 || true
        exit 1
    fi
    sleep 1
done
echo "docker engine answers after $((SECONDS))s"
