#!/usr/bin/env bash
# Installs everything shardscope needs on a fresh Debian 12 machine (as root) and builds it.
# Safe to run twice: each step checks whether its result is already there.
#   bash scripts/setup.sh             # the whole toolchain: build, tests, fuzzing, benchmarks; builds everything
#   bash scripts/setup.sh --no-build  # the same installs, no build (scripts/test.sh builds per stage)
#   bash scripts/setup.sh --demo      # only what running the proxy needs: compiler, libraries, FerretDB,
#                                     # pymongo; builds build/shardscope alone (scripts/demo.sh)
set -euo pipefail
demo=0 build=1
case "${1:-}" in
  --demo) demo=1 ;;
  --no-build) build=0 ;;
  "") ;;
  *) echo "setup.sh: unknown option $1 (--demo, --no-build)" >&2; exit 2 ;;
esac
here="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cache="${SHARDSCOPE_CACHE:-$HOME/.cache/shardscope}"
mkdir -p "$cache"
log() { printf '[setup] %s\n' "$*" >&2; }
# Stage times for the demo's closing table (scripts/demo.sh sets DEMO_STAGE_TIMES to a file).
stage_time() {  # name start_seconds
  [[ -n "${DEMO_STAGE_TIMES:-}" ]] && printf '%s\t%s\n' "$1" "$((SECONDS - $2))" >>"$DEMO_STAGE_TIMES"
  return 0
}

# Building and running the proxy (and FerretDB, built with Go, as the demo's upstream).
apt_packages=(
  build-essential cmake ninja-build pkg-config git ca-certificates curl ccache
  libboost1.81-dev libmongoc-dev libbson-dev libspdlog-dev libfmt-dev libyaml-cpp-dev libcli11-dev
  libsnappy-dev libzstd-dev zlib1g-dev libssl-dev libxxhash-dev python3-pip golang-go
)
# Tests, fuzzing, sanitizers and benchmarks: the rest of the toolchain.
((demo)) || apt_packages+=(
  libgtest-dev libgmock-dev libbenchmark-dev clang libclang-rt-14-dev prometheus haproxy chromium nodejs npm
  dnsmasq-base  # a DNS server on loopback for the mongodb+srv:// tests
  liburing-dev  # bench/run.sh: the io_uring A/B build (cmake -DSHARDSCOPE_IO_URING=ON)
)

missing=()
for p in "${apt_packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
# golang-go, nodejs and npm may come from outside Debian on some images; skip them if the tools exist.
filtered=()
for p in "${missing[@]}"; do
  case "$p" in
    golang-go) command -v go >/dev/null || filtered+=("$p") ;;
    nodejs) command -v node >/dev/null || filtered+=("$p") ;;
    npm) command -v npm >/dev/null || filtered+=("$p") ;;
    python3-pip) python3 -m pip --version >/dev/null 2>&1 || filtered+=("$p") ;;
    *) filtered+=("$p") ;;
  esac
done
t0=$SECONDS
if ((${#filtered[@]})); then
  log "apt-get install ${filtered[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${filtered[@]}" >/dev/null
fi
stage_time "setup: Debian packages" "$t0"

# Test and demo dependencies: FerretDB (Go module proxy), drivers (PyPI, npm, Go modules).
# For the demo they run in the background while the proxy compiles: FerretDB's Go build waits on
# downloads and on one long single-threaded package (modernc.org/sqlite), the C++ build fills the gaps.
deps_pid="" deps_log="$cache/setup-deps.log"
if [[ "${SHARDSCOPE_SKIP_TEST_DEPS:-0}" != 1 && -f "$here/scripts/install_test_deps.sh" ]]; then
  if ((demo && build)); then
    log "FerretDB and pymongo install in the background (log: $deps_log)"
    bash "$here/scripts/install_test_deps.sh" --demo >"$deps_log" 2>&1 &
    deps_pid=$!
  elif ((demo)); then bash "$here/scripts/install_test_deps.sh" --demo
  else bash "$here/scripts/install_test_deps.sh"
  fi
fi
wait_deps() {
  [[ -z "$deps_pid" ]] && return 0
  if ! wait "$deps_pid"; then
    cat "$deps_log" >&2
    log "installing FerretDB or pymongo failed (above)"
    exit 1
  fi
  grep -v '^go: downloading' "$deps_log" >&2 || true
}

if ((!build)); then
  log "installed; nothing built (--no-build)"
  exit 0
fi

# Build: build/shardscope and the test and benchmark executables.
build_dir="${SHARDSCOPE_BUILD_DIR:-$here/build}"
source "$here/scripts/ccache_env.sh"
if ((demo)); then
  # A tree configured earlier (maybe with tests) is reused; a new one builds without tests and benchmarks.
  if [[ ! -f "$build_dir/build.ninja" ]]; then
    log "configuring $build_dir (proxy only)"
    # RelWithDebInfo's code (-O2 -DNDEBUG) without the debug info, which costs ~40% of the compile
    # time; configuring the tree as RelWithDebInfo (scripts/test.sh, the full setup) brings it back.
    cmake -S "$here" -B "$build_dir" -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CXX_FLAGS_RELEASE="-O2 -DNDEBUG" \
      -DCMAKE_C_FLAGS_RELEASE="-O2 -DNDEBUG" -DSHARDSCOPE_TESTS=OFF -DSHARDSCOPE_BENCH=OFF "${ccache_cmake_flags[@]}" >/dev/null
  fi
  targets=(shardscope)
else
  # Always (re)state the options: a tree first configured by --demo gets its tests back.
  log "configuring $build_dir"
  cmake -S "$here" -B "$build_dir" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DSHARDSCOPE_TESTS=ON \
    -DSHARDSCOPE_BENCH=ON "${ccache_cmake_flags[@]}" >/dev/null
  targets=()
fi
log "building (this takes a few minutes on 2 cores the first time)"
t0=$SECONDS
ninja -C "$build_dir" -j "$(nproc)" --quiet "${targets[@]}" || { log "build failed"; exit 1; }
stage_time "setup: C++ build (${targets[*]:-all targets})" "$t0"
log "ready: $build_dir/shardscope"
t0=$SECONDS
wait_deps
((demo)) && stage_time "setup: FerretDB + pymongo, waited for after the build" "$t0"
exit 0
