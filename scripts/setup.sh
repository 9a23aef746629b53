#!/usr/bin/env bash
# Installs what the project needs into .venv (and node_modules for the Allure CLI).
# Sourced by main.sh and test.sh; safe to run again (a warm run installs nothing new).
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
PY="${PYTHON:-python3.11}"
command -v "$PY" >/dev/null 2>&1 || PY=python3
if [ ! -x .venv/bin/python ]; then
  "$PY" -m venv .venv
fi
stamp=".venv/.installed-$(cat pyproject.toml | sha256sum | cut -c1-16)"
if [ ! -f "$stamp" ]; then
  .venv/bin/pip install -q --upgrade pip setuptools wheel
  .venv/bin/pip install -q -e ".[test,reports]"
  touch "$stamp"
fi
if [ -f package.json ] && command -v npm >/dev/null 2>&1; then
  lock_stamp="node_modules/.installed-$(cat package.json package-lock.json 2>/dev/null | sha256sum | cut -c1-16)"
  if [ ! -f "$lock_stamp" ]; then
    if [ -f package-lock.json ]; then npm ci --no-audit --no-fund --loglevel=error; else npm install --no-audit --no-fund --loglevel=error; fi
    touch "$lock_stamp"
  fi
fi
