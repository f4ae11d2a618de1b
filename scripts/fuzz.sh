#!/usr/bin/env bash
# Builds the libFuzzer targets (clang, ASan+UBSan, in build-fuzz/) and runs each one for a bounded
# time over its seed corpus in tests/data/fuzz/<target>/ (fuzz_op_msg -> tests/data/fuzz/op_msg/).
# Any crash, timeout or out-of-memory is copied to tests/data/fuzz/crashes/ and the script fails.
#   bash scripts/fuzz.sh                 # 30 s per target
#   bash scripts/fuzz.sh 300             # 5 min per target
#   bash scripts/fuzz.sh 60 op_msg       # only the named targets
# New inputs found while running go to build-fuzz/corpus/<target>/ (not committed); the committed
# seeds stay small (tests/data/fuzz/, made by fuzz/make_corpus.py).
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$here"
seconds="${1:-30}"
shift || true
build="${SHARDSCOPE_FUZZ_BUILD_DIR:-$here/build-fuzz}"
jobs="${SHARDSCOPE_JOBS:-2}"
log() { printf '[fuzz] %s\n' "$*" >&2; }

source "$here/scripts/ccache_env.sh"
if [[ ! -f "$build/build.ninja" ]]; then
  log "configuring $build (clang, libFuzzer, ASan+UBSan)"
  CC=clang CXX=clang++ cmake -S "$here" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DSHARDSCOPE_FUZZ=ON -DSHARDSCOPE_TESTS=OFF -DSHARDSCOPE_BENCH=OFF "${ccache_cmake_flags[@]}" >/dev/null
fi
log "building fuzzers"
ninja -C "$build" -j "$jobs" --quiet fuzzers

# Seeds are regenerated when missing (the generator is deterministic).
if [[ ! -d tests/data/fuzz/query_shape ]]; then python3 fuzz/make_corpus.py; fi

targets=("$@")
if ((${#targets[@]} == 0)); then
  for src in fuzz/fuzz_*.cpp; do t="$(basename "$src" .cpp)"; targets+=("${t#fuzz_}"); done
fi

crashes="$here/tests/data/fuzz/crashes"
failed=()
summary=()
for t in "${targets[@]}"; do
  bin="$build/fuzz/fuzz_$t"
  [[ -x "$bin" ]] || { log "no binary for $t"; failed+=("$t"); continue; }
  seeds="$here/tests/data/fuzz/$t"
  work="$build/corpus/$t"
  artifacts="$build/artifacts/$t"
  mkdir -p "$work" "$artifacts" "$seeds"
  rm -f "$artifacts"/*
  log "$t: ${seconds}s"
  out="$build/fuzz-$t.log"
  set +e
  # -fork would survive the first crash; plain mode stops at it, which is what a gate wants.
  ASAN_OPTIONS="${ASAN_OPTIONS:-detect_leaks=1:allocator_may_return_null=1}" \
  UBSAN_OPTIONS="${UBSAN_OPTIONS:-halt_on_error=1:print_stacktrace=1}" \
    "$bin" "$work" "$seeds" -max_total_time="$seconds" -max_len=65536 -timeout=10 -rss_limit_mb=2048 \
      -print_final_stats=1 -artifact_prefix="$artifacts/" >"$out" 2>&1
  rc=$?
  set -e
  execs="$(grep -oE 'stat::number_of_executed_units: *[0-9]+' "$out" | grep -oE '[0-9]+$' || echo 0)"
  cov="$(grep -oE 'cov: [0-9]+ ft: [0-9]+' "$out" | tail -1 || true)"
  summary+=("$t: rc=$rc execs=$execs (${cov:-no coverage line}) over ${seconds}s")
  if ((rc != 0)) || compgen -G "$artifacts/*" >/dev/null; then
    mkdir -p "$crashes"
    for a in "$artifacts"/*; do [[ -f "$a" ]] && cp "$a" "$crashes/${t}-$(basename "$a")"; done
    log "$t FAILED (rc=$rc); log: $out; inputs copied to $crashes/"
    grep -m5 -E 'ERROR: |runtime error:|SUMMARY' "$out" >&2 || true
    failed+=("$t")
  fi
done
printf '%s\n' "${summary[@]}" >&2
if ((${#failed[@]})); then
  log "failed: ${failed[*]}"
  exit 1
fi
log "all targets clean"
