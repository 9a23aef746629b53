#!/usr/bin/env bash
# The main job: install, run every protocol's suite against the reference
# implementations (and the third-party pyzmq mc0 broker beside the reference
# broker), the client x server interop matrices when a docker engine answers,
# then write the reports (records, JUnit, Allure HTML, compliance matrix).
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
cd "$ROOT"
source scripts/setup.sh
OUT="${OUT:-out/main}"
rm -rf "$OUT/run" "$OUT/run-pyzmq-mc0" "$OUT/interop"
set +e
.venv/bin/conformance run all --target ref --out "$OUT/run"
suite=$?
# a third-party implementation, graded side by side; its findings do not fail the main job
pyzmq_version="$(.venv/bin/python -c 'import zmq; print(f"pyzmq {zmq.__version__}, libzmq {zmq.zmq_version()}")')"
.venv/bin/conformance run mc0 --impl-name pyzmq-mc0 --impl-version "$pyzmq_version" --out "$OUT/run-pyzmq-mc0" \
  --target "cmd:.venv/bin/python thirdparty/pyzmq_mc0_broker.py --port {port}" >"$OUT/pyzmq-mc0.log" 2>&1
echo "third-party pyzmq mc0 broker: exit $? (log: $OUT/pyzmq-mc0.log)"
# every protocol's client x server interop matrix (docker images); findings do not fail the job either
.venv/bin/python -m conformance.images.interop_job --out "$OUT/interop"
set -e
.venv/bin/python -m conformance.finish --run "$OUT/run" --also "$OUT/run-pyzmq-mc0" --interop "$OUT/interop" \
  --out "$OUT"
echo "main job: suite exit code $suite"
exit $suite
