#!/usr/bin/env bash
# The project's own tests: unit, property and interop tests, every vector, and
# the full suite against the reference implementations.
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
cd "$ROOT"
source scripts/setup.sh
bash scripts/system-deps.sh test
export PYTHONHASHSEED=0
mkdir -p out/test
set +e
.venv/bin/python -m pytest tests vectors scenarios -p no:cacheprovider -q \
  --records out/test/records.jsonl --junitxml out/test/junit.xml "$@"
code=$?
set -e
exit $code
