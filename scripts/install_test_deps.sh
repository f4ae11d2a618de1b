#!/usr/bin/env bash
# Installs what the integration suite (tests/integration) needs; idempotent, run as root.
# Called by scripts/setup.sh. Every step checks whether its result is already there.
#   - FerretDB v1.24.2 (SQLite handler), built from the Go module proxy into $cache/bin/ferretdb
#   - Python: pymongo, pytest, zstandard, python-snappy
#   - Go driver scenario module (tests/drivers/go): go mod download
#   - Node driver scenario + mongosh (tests/drivers/node): npm ci
# The C driver scenario (tests/drivers/c) needs only libmongoc-dev + pkg-config (apt, setup.sh).
# With --demo: only what scripts/demo.sh needs (FerretDB and pymongo for the workload).
set -euo pipefail
demo=0
[[ "${1:-}" == "--demo" ]] && demo=1
here="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cache="${SHARDSCOPE_CACHE:-$HOME/.cache/shardscope}"
ferret_version="v1.24.2"
mkdir -p "$cache/bin"
log() { printf '[install_test_deps] %s\n' "$*" >&2; }
stage_time() {  # name start_seconds: for the demo's closing table (DEMO_STAGE_TIMES, scripts/demo.sh)
  [[ -n "${DEMO_STAGE_TIMES:-}" ]] && printf '%s\t%s\n' "$1" "$((SECONDS - $2))" >>"$DEMO_STAGE_TIMES"
  return 0
}
# A Go toolchain installed from the upstream tarball may not be on PATH in non-login shells.
if ! command -v go >/dev/null && [[ -x /usr/local/go/bin/go ]]; then export PATH="/usr/local/go/bin:$PATH"; fi

# ---------------------------------------------------------------- FerretDB
# `go install github.com/FerretDB/FerretDB/cmd/ferretdb@v1.24.2` builds a binary that panics at start:
# build/version/version.txt is not committed upstream (their task runner writes it), and the version
# check runs when the main module is FerretDB itself. So: fetch the module source through the module
# proxy, copy it, write version.txt, and build there.
ferret_bin="$cache/bin/ferretdb"
t0=$SECONDS
# The version is read whole before it is matched: with pipefail, `| grep -q` or `| head -1` can stop
# reading early, FerretDB dies of SIGPIPE and the pipeline fails (a rebuild, or under set -e an exit).
ferret_version_of() { "$1" --version 2>/dev/null | sed -n '1,20p'; }
if [[ -x "$ferret_bin" ]] && [[ "$(ferret_version_of "$ferret_bin")" == *"version: $ferret_version"* ]]; then
  log "FerretDB $ferret_version already built at $ferret_bin"
else
  command -v go >/dev/null || { log "go not found (setup.sh installs it)"; exit 1; }
  log "building FerretDB $ferret_version (module proxy source)"
  src_dir="$(cd "$cache" && go mod download -json "github.com/FerretDB/FerretDB@$ferret_version" \
    | python3 -c 'import json,sys; print(json.load(sys.stdin)["Dir"])')"
  build_dir="$cache/src/ferretdb-$ferret_version"
  rm -rf "$build_dir"
  mkdir -p "$(dirname "$build_dir")"
  cp -r "$src_dir" "$build_dir"
  chmod -R u+w "$build_dir"
  echo "$ferret_version" > "$build_dir/build/version/version.txt"
  (cd "$build_dir" && GOFLAGS=-buildvcs=false go build -trimpath -o "$ferret_bin.tmp" ./cmd/ferretdb)
  mv "$ferret_bin.tmp" "$ferret_bin"
  ferret_version_of "$ferret_bin" | sed -n 1p >&2
fi
stage_time "setup: FerretDB $ferret_version (Go build)" "$t0"

# ---------------------------------------------------------------- Python
t0=$SECONDS
# Exact versions: a release on the day CI runs must not change what the tests run with.
py_reqs=("pymongo==4.10.1" "pytest==9.2.0" "zstandard==0.25.0" "python-snappy==0.7.3" "PyYAML==6.0.3")
((demo)) && py_reqs=("pymongo==4.10.1")
if SHARDSCOPE_PY_REQS="${py_reqs[*]}" python3 - <<'EOF' 2>/dev/null
import importlib.metadata as md, os, sys
need = dict(r.split("==") for r in os.environ["SHARDSCOPE_PY_REQS"].split())
for name, ver in need.items():
    if md.version(name) != ver:
        sys.exit(1)
EOF
then
  log "Python packages already installed"
else
  log "pip install ${py_reqs[*]}"
  if ! python3 -m pip install -q "${py_reqs[@]}" 2>/tmp/shardscope-pip.err; then
    if grep -q externally-managed /tmp/shardscope-pip.err; then
      python3 -m pip install -q --break-system-packages "${py_reqs[@]}"
    else
      cat /tmp/shardscope-pip.err >&2
      exit 1
    fi
  fi
fi

stage_time "setup: pip install ${py_reqs[*]}" "$t0"

if ((demo)); then
  log "done (demo dependencies)"
  exit 0
fi

# ---------------------------------------------------------------- Go driver module
if command -v go >/dev/null; then
  log "go mod download (tests/drivers/go)"
  (cd "$here/tests/drivers/go" && go mod download)
fi

# ---------------------------------------------------------------- Node driver + mongosh
node_dir="$here/tests/drivers/node"
stamp="$node_dir/node_modules/.shardscope-lock.sha256"
want="$(sha256sum "$node_dir/package-lock.json" | cut -d' ' -f1)"
if [[ -f "$stamp" && "$(cat "$stamp")" == "$want" && -x "$node_dir/node_modules/.bin/mongosh" ]]; then
  log "node_modules up to date"
else
  log "npm ci (tests/drivers/node)"
  (cd "$node_dir" && npm ci --no-audit --no-fund --loglevel=error)
  echo "$want" > "$stamp"
fi

log "done"
