#!/usr/bin/env bash
# Sanitizer builds and runs.
#   bash scripts/sanitize.sh          # ASan+UBSan: build, unit tests, integration subset (build-asan/)
#   bash scripts/sanitize.sh build    # ... each step alone (scripts/test.sh times them as stages)
#   bash scripts/sanitize.sh unit
#   bash scripts/sanitize.sh integration [pytest args]
#   bash scripts/sanitize.sh tsan     # ThreadSanitizer: concurrency unit tests + a --threads 2 proxy
#                                     # under concurrent pymongo clients (build-tsan/)
#   bash scripts/sanitize.sh all      # both
# Fails on any sanitizer report: the unit tests abort on the first one (halt_on_error), and the
# proxy's stderr logs kept by the integration harness are grepped afterwards (a report in a proxy
# that a test did not otherwise notice still fails the run).
# The ASan tree builds only what it runs: the unit tests and the proxy (not benchmarks, fuzzers
# or the plain-allocator tests of tests/allocations and tests/heap), unoptimised with line tables
# only, and each module's unit tests compiled as one unit (SHARDSCOPE_UNITY_TESTS). Measured from
# an empty ccache on 2 cores: at -O1, 2,127 CPU-seconds (17.5 min); -O0, 937 (7.7 min), with the unit
# tests 28 s and the integration subset 37 s slower. ASan and UBSan find the same faults at -O0.
# Extra pytest selection: SANITIZE_PYTEST_K (default below).
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
source "$here/scripts/ccache_env.sh"
cd "$here"
mode="${1:-asan}"
jobs="${SHARDSCOPE_JOBS:-2}"
log() { printf '[sanitize] %s\n' "$*" >&2; }
report_pattern='ERROR: AddressSanitizer|ERROR: LeakSanitizer|runtime error:|WARNING: ThreadSanitizer|ERROR: ThreadSanitizer'

# Reports and where they came from: our processes' logs under $1 (the proxies' stderr kept by the
# harness, ctest's and the soak's output) whose text matches the pattern. FerretDB's own logs are
# left out: Go's "runtime error:" panics there are not ours.
scan_logs() {
  local dir="$1" hits
  hits="$(grep -rlE "$report_pattern" "$dir" --include='shardscope-*.stderr' --include='proxy.stderr' \
    --include='*.log' --include='*.out' 2>/dev/null || true)"
  if [[ -n "$hits" ]]; then
    log "sanitizer reports in:"
    while read -r f; do
      echo "---- $f" >&2
      grep -m3 -A12 -E "$report_pattern" "$f" >&2 || true
    done <<<"$hits"
    return 1
  fi
}

asan_build_dir="$here/build-asan"
asan_env() {
  export ASAN_OPTIONS="halt_on_error=1:detect_leaks=1:abort_on_error=0:detect_stack_use_after_return=0"
  export UBSAN_OPTIONS="halt_on_error=1:print_stacktrace=1"
  export LSAN_OPTIONS="suppressions=$here/scripts/sanitizer/lsan.supp:print_suppressions=0"
}

asan_build() {
  local build="$asan_build_dir" flags="-O0 -g1 -DNDEBUG"
  if [[ ! -f "$build/build.ninja" ]]; then
    log "configuring $build (ASan+UBSan)"
    cmake -S "$here" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DSHARDSCOPE_SANITIZE=ON \
      -DSHARDSCOPE_BENCH=OFF -DSHARDSCOPE_UNITY_TESTS=ON "-DCMAKE_CXX_FLAGS_RELWITHDEBINFO=$flags" "-DCMAKE_C_FLAGS_RELWITHDEBINFO=$flags" \
      "${ccache_cmake_flags[@]}" >/dev/null
  fi
  log "building $build (unit tests and the proxy)"
  ninja -C "$build" -j "$jobs" --quiet unit_tests shardscope
}

asan_unit() {
  asan_env
  local logs
  logs="$(mktemp -d /tmp/shardscope-asan-logs.XXXXXX)"
  log "unit tests (ctest) under ASan+UBSan; logs in $logs"
  ctest --test-dir "$asan_build_dir" -j "$jobs" --timeout 600 --output-on-failure --output-log "$logs/ctest.log" -L unit
  scan_logs "$logs" || { log "FAILED: sanitizer reports (logs kept in $logs)"; exit 1; }
  rm -rf "$logs"
}

asan_integration() {
  asan_env
  local logs
  logs="$(mktemp -d /tmp/shardscope-asan-logs.XXXXXX)"
  # Prometheus and Chromium exercise the same admin code as test_stats_api; the Go and Node
  # scenario programs cover no proxy code that pymongo and the C driver do not; the soak has
  # its own run (and ASan's memory overhead would distort its RSS bounds).
  local k="${SANITIZE_PYTEST_K:-not prometheus and not dashboard and not soak}"
  local drivers=tests/integration/test_drivers.py rc=0
  log "integration tests against build-asan/shardscope (-k \"$k\", without the Go and Node scenarios)"
  SHARDSCOPE_BIN="$asan_build_dir/shardscope" SHARDSCOPE_KEEP_TEST_LOGS=1 SHARDSCOPE_REQUIRE_PROXY=1 TMPDIR="$logs" \
    python3 -m pytest tests/integration -q -rfE -p no:cacheprovider -k "$k" \
    --ignore=tests/integration/test_packaging.py \
    --deselect "$drivers::test_scenario_direct[go]" --deselect "$drivers::test_scenario_direct[node]" \
    --deselect "$drivers::test_scenario_through_proxy_equals_direct[go]" \
    --deselect "$drivers::test_scenario_through_proxy_equals_direct[node]" "$@" || rc=$?
  # Reports are looked for even when a test failed: a report explains a failure better than it.
  scan_logs "$logs" || { log "FAILED: sanitizer reports (logs kept in $logs)"; exit 1; }
  ((rc == 0)) || { log "FAILED: integration tests (exit $rc; logs kept in $logs)"; exit "$rc"; }
  rm -rf "$logs"
}

run_asan() {
  asan_build
  asan_unit
  asan_integration
  log "ASan+UBSan: clean"
}

run_tsan() {
  local build="$here/build-tsan"
  if [[ ! -f "$build/build.ninja" ]]; then
    log "configuring $build (ThreadSanitizer)"
    local flags=()
    if grep -q SHARDSCOPE_TSAN "$here/CMakeLists.txt"; then
      flags=(-DSHARDSCOPE_TSAN=ON)
    else  # until the top-level option exists: the same flags by hand
      flags=("-DCMAKE_CXX_FLAGS=-fsanitize=thread -fno-omit-frame-pointer" "-DCMAKE_C_FLAGS=-fsanitize=thread"
             "-DCMAKE_EXE_LINKER_FLAGS=-fsanitize=thread")
    fi
    cmake -S "$here" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DSHARDSCOPE_BENCH=OFF "${flags[@]}" "${ccache_cmake_flags[@]}" >/dev/null
  fi
  log "building $build (shardscope, stats_tests, rewrite_tests, admin_tests)"
  ninja -C "$build" -j "$jobs" --quiet shardscope stats_tests rewrite_tests admin_tests
  export TSAN_OPTIONS="halt_on_error=1:second_deadlock_stack=1:suppressions=$here/scripts/sanitizer/tsan.supp"
  local logs
  logs="$(mktemp -d /tmp/shardscope-tsan-logs.XXXXXX)"
  log "concurrency unit tests under TSan"
  "$build/tests/stats_tests" --gtest_filter='*Concurrent*:*Registry*' >"$logs/stats_tests.log" 2>&1 ||
    { cat "$logs/stats_tests.log" >&2; exit 1; }
  "$build/tests/admin_tests" >"$logs/admin_tests.log" 2>&1 || { cat "$logs/admin_tests.log" >&2; exit 1; }
  "$build/tests/rewrite_tests" --gtest_filter='*Mapping*:*Lookup*:*Concurrent*' >"$logs/rewrite_tests.log" 2>&1 ||
    { cat "$logs/rewrite_tests.log" >&2; exit 1; }
  log "proxy --threads 2 under concurrent pymongo clients"
  # The soak script, small: 50 raw connections, 6 pymongo threads, admin polled, SIGTERM drain.
  SHARDSCOPE_BIN="$build/shardscope" TMPDIR="$logs" \
    python3 "$here/tests/soak/soak.py" --threads 2 --connections 50 --workers 6 --seconds "${TSAN_SECONDS:-45}" \
      --warmup-s 5 --slow 2 --big-slow 0 --json-out "$logs/soak.json" >"$logs/soak.out"
  scan_logs "$logs" || { log "FAILED: ThreadSanitizer reports (logs kept in $logs)"; exit 1; }
  rm -rf "$logs"
  log "TSan: clean"
}

shift || true
case "$mode" in
  asan) run_asan ;;
  build) asan_build ;;
  unit) asan_unit ;;
  integration) asan_integration "$@" ;;
  tsan) run_tsan ;;
  all) run_asan; run_tsan ;;
  *) echo "usage: $0 [asan|build|unit|integration|tsan|all]" >&2; exit 2 ;;
esac
