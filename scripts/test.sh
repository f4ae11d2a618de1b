#!/usr/bin/env bash
# The whole test suite on a fresh machine: set-up and build, unit tests (ctest), then the
# integration suites with real drivers, a real upstream (FerretDB), Prometheus and Chromium (pytest).
#   bash scripts/test.sh            # everything
#   bash scripts/test.sh -k stats   # extra arguments go to pytest
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$here"
bash scripts/setup.sh

echo "== unit tests (ctest)"
ctest --test-dir build --output-on-failure -j "$(nproc)" --timeout 300

echo "== fuzzing (libFuzzer, ${SHARDSCOPE_FUZZ_SECONDS:-20} s per target over the seed corpora)"
bash scripts/fuzz.sh "${SHARDSCOPE_FUZZ_SECONDS:-20}"

echo "== sanitizers (ASan + UBSan: unit tests and an integration subset against the sanitized binary)"
# The integration subset here covers the parsers, the fault paths and mirror shutdown (a worker
# stuck on a stalled shadow); `bash scripts/sanitize.sh` alone
# runs the wider default selection.
SANITIZE_PYTEST_K="${SANITIZE_PYTEST_K:-proxy_wire or test_faults or compression or rewrite or reload or mirror or (tls and not allocat)}" \
  bash scripts/sanitize.sh asan

echo "== integration tests (pytest: real drivers through build/shardscope to FerretDB)"
# A missing binary fails the run instead of skipping the proxy tests.
SHARDSCOPE_REQUIRE_PROXY=1 python3 -m pytest tests/integration -q -p no:cacheprovider "$@"
