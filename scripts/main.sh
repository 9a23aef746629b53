#!/usr/bin/env bash
# The main job: install, run every protocol's suite against the reference
# implementations, then write the reports (records, JUnit, Allure HTML).
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
cd "$ROOT"
source scripts/setup.sh
OUT="${OUT:-out/main}"
rm -rf "$OUT/run"
set +e
.venv/bin/conformance run all --target ref --out "$OUT/run" -- -p no:randomly
suite=$?
set -e
.venv/bin/python -m conformance.finish --run "$OUT/run" --out "$OUT"
echo "main job: suite exit code $suite"
exit $suite
