#!/usr/bin/env bash
# System packages the tests need beyond Python and npm: headless Chromium for the browser
# tests of the reports. Installed from Debian when missing (needs root; skipped otherwise,
# and the browser tests then skip, or fail under CI=true).
set -euo pipefail
if command -v chromium >/dev/null 2>&1; then
  exit 0
fi
if [ "$(id -u)" -ne 0 ] || ! command -v apt-get >/dev/null 2>&1; then
  echo "system-deps: chromium missing and cannot be installed here (need root and apt-get)" >&2
  exit 0
fi
echo "system-deps: installing chromium"
apt-get update -q
DEBIAN_FRONTEND=noninteractive apt-get install -y -q chromium
