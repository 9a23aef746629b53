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
# --strict: the reference implementations must be clean of NON-STRICT findings too (and pytest's
# own strict markers/config/xfail apply to the project's tests)
.venv/bin/python -m pytest tests vectors scenarios --strict -p no:cacheprovider -q \
  --records out/test/records.jsonl --junitxml out/test/junit.xml "$@"
code=$?
set -e
exit $code
