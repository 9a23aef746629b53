#!/usr/bin/env bash
# Follows the README on a fresh Debian: a debootstrap rootfs with only python3, ca-certificates
# and git, imported as an image; a fresh clone of this repository's HEAD (committed work only)
# copied in; then the README's first command, `bash scripts/main.sh`, as root, with no other step.
# Passes when the main job exits 0 having written the Allure HTML and the compliance matrix.
# Too slow for CI (a rootfs, the system packages, PyPI and npm installs, the whole suite).
#
# usage: sudo bash scripts/try-fresh-debian.sh RELEASE      (bookworm, trixie, ...)
#   WORK=DIR   where the rootfs, clone, log and the job's out/main copy go
#              (default: ${TMPDIR:-/tmp}/try-fresh-debian); the rootfs and its image are kept
#              and reused, the clone and container are new each time
#   MIRROR=URL the Debian mirror (default http://deb.debian.org/debian)
#   EXTRA_CA="FILE.crt ..."  certificate authorities this machine adds to Debian's (default: the
#              host's /usr/local/share/ca-certificates/*.crt), e.g. a proxy that intercepts TLS
#              on the way to PyPI and npm: the container trusts what the host trusts, no more
# Needs root, debootstrap and a docker engine (bash scripts/docker-engine.sh).
set -euo pipefail
release="${1:?usage: try-fresh-debian.sh RELEASE (bookworm, trixie, ...)}"
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
WORK="${WORK:-${TMPDIR:-/tmp}/try-fresh-debian}"
MIRROR="${MIRROR:-http://deb.debian.org/debian}"
image="conformance-try-debian:$release"
mkdir -p "$WORK"
WORK="$(cd "$WORK" && pwd)"
case "$WORK/" in "$ROOT"/*) echo "try-fresh-debian: WORK=$WORK is inside the clone; pick a folder outside it" >&2; exit 2;; esac
if [ "$(id -u)" -ne 0 ] || ! command -v debootstrap >/dev/null 2>&1 || ! command -v docker >/dev/null 2>&1; then
  echo "try-fresh-debian: needs root, debootstrap and docker (apt-get install debootstrap docker.io)" >&2
  exit 2
fi

if ! docker image inspect "$image" >/dev/null 2>&1; then
  rootfs="$WORK/rootfs-$release"
  if [ ! -x "$rootfs/usr/bin/python3" ]; then
    rm -rf "$rootfs"
    # what a fresh Debian with Python has: no venv, no Java, no Node
    debootstrap --variant=minbase --include=python3,ca-certificates,git "$release" "$rootfs" "$MIRROR" \
      >"$WORK/debootstrap-$release.log" 2>&1 \
      || { echo "try-fresh-debian: debootstrap failed: $WORK/debootstrap-$release.log" >&2; exit 1; }
  fi
  tar -C "$rootfs" -c . | docker import - "$image" >/dev/null
fi

clone="$WORK/clone-$release"
rm -rf "$clone"
git clone -q "$ROOT" "$clone"
echo "try-fresh-debian: $release, clone of $(git -C "$clone" rev-parse --short HEAD) ($(git -C "$clone" log -1 --format=%s | cut -c1-60))"

name="conformance-try-$release-$$"
log="$WORK/main-$release.log"
# the machine's own trust (not the project's business): Debian's store plus the host's additions,
# named for pip and Node the way Debian's own tools see it (pip and npm carry their own stores)
read -r -a cas <<<"${EXTRA_CA-$(ls /usr/local/share/ca-certificates/*.crt 2>/dev/null | tr '\n' ' ')}"
trust=()
command=(bash scripts/main.sh)
if [ "${#cas[@]}" -gt 0 ]; then
  bundle=/etc/ssl/certs/ca-certificates.crt
  trust=(-e "PIP_CERT=$bundle" -e "NODE_EXTRA_CA_CERTS=$bundle")
  command=(bash -c "update-ca-certificates >/dev/null && exec bash scripts/main.sh")
fi
docker create --name "$name" --network host -w /root/conformance "${trust[@]}" "$image" "${command[@]}" >/dev/null
trap 'docker rm -f "$name" >/dev/null 2>&1 || true' EXIT
for ca in "${cas[@]}"; do docker cp "$ca" "$name:/usr/local/share/ca-certificates/$(basename "$ca")"; done
docker cp "$clone/." "$name:/root/conformance"
start=$(date +%s)
set +e
docker start -a "$name" 2>&1 | tee "$log"
code=${PIPESTATUS[0]}
set -e
elapsed=$(( $(date +%s) - start ))
rm -rf "$WORK/out-$release"
docker cp "$name:/root/conformance/out/main" "$WORK/out-$release" 2>/dev/null || true

# README: "do nothing more on a warm second run": the set-up again, in what the first run left
warm_image="conformance-try-warm-$release-$$"
docker commit "$name" "$warm_image" >/dev/null
warm_start=$(date +%s)
warm=$(docker run --rm --network host -w /root/conformance "${trust[@]}" "$warm_image" bash scripts/setup.sh 2>&1) \
  || warm="exit $?: $warm"
warm_elapsed=$(( $(date +%s) - warm_start ))
docker rmi "$warm_image" >/dev/null

problems=()
[ "$code" -eq 0 ] || problems+=("main.sh exit $code")
[ -z "$warm" ] || problems+=("the warm set-up did something: ${warm:0:300}")
grep -q Traceback "$log" && problems+=("a traceback in the log")
[ -f "$WORK/out-$release/allure-report/index.html" ] || problems+=("no Allure HTML")
[ -f "$WORK/out-$release/compliance/matrix.html" ] || problems+=("no compliance matrix")
echo "try-fresh-debian: $release: main.sh took ${elapsed}s, the warm set-up ${warm_elapsed}s; log $log, reports $WORK/out-$release"
if [ "${#problems[@]}" -gt 0 ]; then
  echo "try-fresh-debian: $release: FAILED (${problems[*]})" >&2
  exit 1
fi
echo "try-fresh-debian: $release: OK"
