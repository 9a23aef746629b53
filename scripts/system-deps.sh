#!/usr/bin/env bash
# System packages the project needs beyond Python, from the distribution's own packages:
#   main: venv's pip for Python (python3-venv), a Java runtime for PySpark (the compliance
#         report), Node.js with npm for the Allure 3 CLI (the HTML report);
#   test: the same, headless Chromium for the browser tests of the reports, and tcpdump for the
#         real-capture test of check-trace (tests/trace/test_tcpdump.py).
# Installed when missing and this is root with apt-get. Otherwise one line says what to install,
# and the steps that need it say "skipped" (the browser tests skip, or fail under CI=true).
# usage: system-deps.sh [main|test]
set -euo pipefail
role="${1:-main}"
PY="${PYTHON:-python3}"

missing=()
version() { "$1" -c 'import sys; print("%d.%d" % sys.version_info[:2])' 2>/dev/null || true; }
if ! "$PY" -c "import ensurepip, venv" >/dev/null 2>&1; then
  # Debian ships venv's pip apart from the interpreter: python3-venv for the default python3,
  # python3.X-venv for another one (PYTHON=python3.12)
  wanted="$(version "$PY")"
  if [ -n "$wanted" ] && [ "$wanted" != "$(version python3)" ]; then
    missing+=("python$wanted-venv")
  else
    missing+=(python3-venv)
  fi
fi
# PySpark starts $JAVA_HOME/bin/java when JAVA_HOME is set, else the java on PATH
if [ -n "${JAVA_HOME:-}" ]; then
  [ -x "$JAVA_HOME/bin/java" ] || missing+=(default-jre-headless)
else
  command -v java >/dev/null 2>&1 || missing+=(default-jre-headless)
fi
command -v npx >/dev/null 2>&1 || missing+=(npm)
test_only=()
if [ "$role" = test ]; then
  command -v chromium >/dev/null 2>&1 || test_only+=(chromium)
  command -v tcpdump >/dev/null 2>&1 || test_only+=(tcpdump)
fi
if [ "${#missing[@]}" -eq 0 ] && [ "${#test_only[@]}" -eq 0 ]; then
  exit 0
fi

all=("${missing[@]}" "${test_only[@]}")
if [ "$(id -u)" -ne 0 ] || ! command -v apt-get >/dev/null 2>&1; then
  echo "system-deps: missing ${all[*]} (cannot install here: need root and apt-get); install them, e.g. sudo apt-get install ${all[*]}" >&2
  exit 0
fi
echo "system-deps: installing ${all[*]}"
apt-get update -q
if [ "${#missing[@]}" -gt 0 ]; then
  # recommends would bring compilers (npm) and desktop pieces (the JRE) that nothing here uses
  DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "${missing[@]}"
fi
if [ "${#test_only[@]}" -gt 0 ]; then
  DEBIAN_FRONTEND=noninteractive apt-get install -y -q "${test_only[@]}"
fi
