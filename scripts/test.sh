#!/usr/bin/env bash
# The whole test suite on a fresh machine (what CI runs): set-up, then each stage timed. A stage
# that fails does not stop the stages that do not need it; the run ends with a table of stages
# (status, minutes) and fails if any stage failed.
#   bash scripts/test.sh            # everything
#   bash scripts/test.sh -k stats   # extra arguments go to pytest (both integration stages)
#
# Stages (each builds only what it runs):
#   set-up                 Debian packages, FerretDB, drivers (scripts/setup.sh --no-build)
#   build                  build/: the proxy and the plain-allocator tests (optimised)
#   plain-allocator tests  hot paths allocate nothing; memory held as malloc reports it (tests/allocations,
#                          tests/heap: a sanitizer's allocator would hide both)
#   integration            pytest: real drivers through build/shardscope to FerretDB, Prometheus,
#                          Chromium; the tests of the sanitizer subset run in their stage instead
#                          (except those marked both_allocators: memory checks that need the plain allocator)
#   fuzz                   libFuzzer targets (clang, build-fuzz/), bounded per target
#   sanitizer build        build-asan/: unit tests and the proxy under ASan+UBSan; starts after the build
#                          stage and compiles, at nice 19, beside the stages that follow (its stage waits)
#   sanitizer unit tests   every unit test (ctest), sanitized
#   sanitizer integration  the parser, fault, compression, rewrite, reload, mirror and TLS tests
#                          against build-asan/shardscope; any sanitizer report fails it
set -uo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$here"
jobs="${SHARDSCOPE_JOBS:-$(nproc)}"
fuzz_seconds="${SHARDSCOPE_FUZZ_SECONDS:-15}"
# The integration tests that run against the sanitized binary (and only there).
sanitized_k="${SANITIZE_PYTEST_K:-proxy_wire or test_faults or compression or rewrite or reload or mirror or (tls and not allocat)}"

# Each stage's output is also kept in build-logs/, and the summary repeats a failed stage's failure
# lines: CI shows only the end of the output.
logs="$here/build-logs"
mkdir -p "$logs"
rm -f "$logs/flaky.txt"
declare -a stage_names=() stage_status=() stage_seconds=()
declare -A status_of=()
run_started=$(date +%s)

# stage NAME NEEDS COMMAND...: runs COMMAND unless a stage it needs (comma-separated) did not pass.
stage() {
  local name="$1" needs="$2"
  shift 2
  local need
  local -a need_list=()
  IFS=, read -r -a need_list <<<"$needs"
  for need in "${need_list[@]}"; do
    if [[ "${status_of[$need]:-}" != passed ]]; then
      echo "== $name: skipped ($need ${status_of[$need]:-did not run})"
      stage_names+=("$name") stage_status+=("skipped") stage_seconds+=(0)
      status_of[$name]=skipped
      return
    fi
  done
  echo "== $name"
  local start rc log="$logs/${name// /-}.log"
  start=$(date +%s)
  "$@" 2>&1 | tee "$log"
  rc=${PIPESTATUS[0]}
  local took=$(($(date +%s) - start)) status=passed
  ((rc == 0)) || status="FAILED (exit $rc)"
  echo "== $name: $status in $((took / 60))m$((took % 60))s"
  stage_names+=("$name") stage_status+=("$status") stage_seconds+=("$took")
  status_of[$name]=$status
}

build_plain() {
  source scripts/ccache_env.sh
  cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DSHARDSCOPE_TESTS=ON -DSHARDSCOPE_BENCH=OFF \
    "${ccache_cmake_flags[@]}" >/dev/null &&
    ninja -C build -j "$jobs" --quiet shardscope plain_tests
}

plain_tests() {
  ctest --test-dir build --output-on-failure -j "$jobs" --timeout 300 -L plain
}

integration() {
  # A missing binary fails the run instead of skipping the proxy tests.
  SHARDSCOPE_REQUIRE_PROXY=1 pytest_failures_once_more integration tests/integration \
    -k "not ($sanitized_k) or both_allocators" "$@"
}

# pytest_failures_once_more NAME PYTEST_ARGS...: a few failed tests (at most 5) run once more, alone;
# the stage passes only if each then passes, and the summary names them as flaky. More failures, or
# one that fails again, fail the stage.
pytest_failures_once_more() {
  local first="$logs/$1-first-try.log"
  shift
  python3 -m pytest -q -rfE -p no:cacheprovider "$@" 2>&1 | tee "$first"
  local rc=${PIPESTATUS[0]}
  ((rc == 0)) && return 0
  local -a failed=()
  mapfile -t failed < <(grep -oE '^(FAILED|ERROR) tests/[^ ]+' "$first" | cut -d' ' -f2 | sort -u)
  ((${#failed[@]} > 0 && ${#failed[@]} <= 5)) || return "$rc"
  echo "== ${#failed[@]} failed; once more, alone: ${failed[*]}"
  python3 -m pytest -q -rfE -p no:cacheprovider "${failed[@]}" || return 1
  printf 'FLAKY (failed, then passed alone): %s\n' "${failed[@]}" >>"$logs/flaky.txt"
}

# The sanitizer build needs only set-up, and the integration tests spend much of their run waiting on
# sockets, servers and drivers: it starts when the build stage ends and compiles beside them at the
# lowest CPU priority (nice 19: a test process that wakes takes the CPU back), so its own stage mostly
# waits for what is left. It runs in its own process group, ended with the run.
sanitizer_build_pid=""
start_sanitizer_build() {
  rm -f "$logs/sanitizer-build.rc"
  setsid bash -c 'nice -n 19 bash scripts/sanitize.sh build >"$1/sanitizer-build-background.log" 2>&1
                  echo $? >"$1/sanitizer-build.rc"' _ "$logs" &
  sanitizer_build_pid=$!
}
stop_sanitizer_build() { [[ -n "$sanitizer_build_pid" ]] && kill -- "-$sanitizer_build_pid" 2>/dev/null; return 0; }
trap stop_sanitizer_build EXIT
sanitizer_build() {
  [[ -n "$sanitizer_build_pid" ]] || start_sanitizer_build
  until [[ -s "$logs/sanitizer-build.rc" ]]; do sleep 2; done
  cat "$logs/sanitizer-build-background.log"
  return "$(cat "$logs/sanitizer-build.rc")"
}
sanitizer_unit() { bash scripts/sanitize.sh unit; }
sanitizer_integration() { SANITIZE_PYTEST_K="$sanitized_k" bash scripts/sanitize.sh integration "$@"; }

stage "set-up" "" bash scripts/setup.sh --no-build
stage "build" "set-up" build_plain
[[ "${status_of[set-up]}" == passed ]] && start_sanitizer_build  # beside the next stages, niced (above)
stage "plain-allocator tests" "build" plain_tests
stage "integration" "build" integration "$@"
stage "fuzz" "set-up" bash scripts/fuzz.sh "$fuzz_seconds"
stage "sanitizer build" "set-up" sanitizer_build
stage "sanitizer unit tests" "sanitizer build" sanitizer_unit
stage "sanitizer integration" "sanitizer build" sanitizer_integration "$@"

total=$(($(date +%s) - run_started))
echo
echo "== summary ($((total / 60))m$((total % 60))s in all, $(nproc) cores)"
failed=0
for i in "${!stage_names[@]}"; do
  printf '   %-24s %-20s %5.1f min\n' "${stage_names[$i]}" "${stage_status[$i]}" "$(awk "BEGIN{print ${stage_seconds[$i]} / 60}")"
  [[ "${stage_status[$i]}" == passed ]] || failed=1
done
if [[ -s "$logs/flaky.txt" ]]; then
  echo
  echo "== flaky: failed once, passed when run again alone"
  cat "$logs/flaky.txt"
fi
for i in "${!stage_names[@]}"; do
  [[ "${stage_status[$i]}" == FAILED* ]] || continue
  echo
  echo "== what failed in ${stage_names[$i]} (whole output: build-logs/${stage_names[$i]// /-}.log)"
  grep -E '^(FAILED|ERROR) |\*\*\*Failed|\*\*\*Exception|^[[:space:]]+[0-9]+ - |==[0-9]+==ERROR|SUMMARY: |runtime error:|: error:|^E +[A-Za-z]*Error' \
    "$logs/${stage_names[$i]// /-}.log" | head -40
done
exit $failed
