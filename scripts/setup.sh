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
pip_failed() {
  echo "setup: pip could not install $1 (its messages are above): this needs PyPI (https://pypi.org, or PIP_INDEX_URL; PIP_CERT for a proxy's certificate authority)" >&2
  exit 1
}
if [ ! -f "$stamp" ]; then
  .venv/bin/pip install -q --upgrade pip || pip_failed "pip"
  .venv/bin/pip install -q -c constraints.txt setuptools wheel || pip_failed "setuptools and wheel"
  .venv/bin/pip install -q -c constraints.txt -e ".[test]" || pip_failed "the project's packages (constraints.txt)"
  touch "$stamp"
fi
if [ -f package.json ] && command -v npm >/dev/null 2>&1; then
  lock_stamp="node_modules/.installed-$(cat package.json package-lock.json 2>/dev/null | sha256sum | cut -c1-16)"
  if [ ! -f "$lock_stamp" ]; then
    if [ -f package-lock.json ]; then npm_install=(npm ci); else npm_install=(npm install); fi
    "${npm_install[@]}" --no-audit --no-fund --loglevel=error || {
      echo "setup: '${npm_install[*]}' failed (its messages are above): the Allure CLI comes from the npm registry (https://registry.npmjs.org, or npm's 'registry' setting)" >&2
      exit 1
    }
    touch "$lock_stamp"
  fi
fi
