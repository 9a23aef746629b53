#!/usr/bin/env bash
# Installs what the project needs: the system packages (scripts/system-deps.sh), .venv with the
# pinned Python packages (constraints.txt), and node_modules for the Allure CLI.
# Sourced by main.sh and test.sh; safe to run again (a warm run installs nothing new).
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
new_enough() { "$1" -c "import sys; sys.exit(sys.version_info < (3, 11))" >/dev/null 2>&1; }
PY="${PYTHON:-}"
if [ -z "$PY" ]; then
  for candidate in python3 python3.13 python3.12 python3.11; do
    if new_enough "$candidate"; then PY="$candidate"; break; fi
  done
fi
if [ -z "$PY" ] || ! new_enough "$PY"; then
  echo "setup: no Python 3.11 or newer found${PY:+ as $PY}: install one (Debian: apt-get install python3 python3-venv), or set PYTHON=..." >&2
  exit 1
fi
PYTHON="$PY" bash scripts/system-deps.sh main
if [ ! -x .venv/bin/python ]; then
  if ! "$PY" -m venv .venv >/dev/null; then
    rm -rf .venv
    echo "setup: '${PY} -m venv' failed: install venv for it (Debian: apt-get install python3-venv)" >&2
    exit 1
  fi
fi
stamp=".venv/.installed-$(cat pyproject.toml constraints.txt | sha256sum | cut -c1-16)"
if [ ! -f "$stamp" ]; then
  .venv/bin/pip install -q --upgrade pip
  .venv/bin/pip install -q -c constraints.txt setuptools wheel
  .venv/bin/pip install -q -c constraints.txt -e ".[test]"
  touch "$stamp"
fi
if [ -f package.json ] && command -v npm >/dev/null 2>&1; then
  lock_stamp="node_modules/.installed-$(cat package.json package-lock.json 2>/dev/null | sha256sum | cut -c1-16)"
  if [ ! -f "$lock_stamp" ]; then
    if [ -f package-lock.json ]; then npm ci --no-audit --no-fund --loglevel=error; else npm install --no-audit --no-fund --loglevel=error; fi
    touch "$lock_stamp"
  fi
fi
