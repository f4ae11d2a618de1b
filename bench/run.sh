#!/usr/bin/env bash
# Side-by-side benchmark: direct to a canned upstream, haproxy (TCP relay), shardscope forwarding only,
# shardscope with routing + admin/statistics, and mongobetween; plus shardscope against FerretDB.
# Prints one table and writes bench/RESULTS.md. All traffic stays on 127.0.0.1; the run takes ~6.5 min.
#
#   bash bench/run.sh [--duration S (10)] [--rate OPS (5000)] [--idle N (9900)] [--quick]
#                     [--no-pin] [--no-ferret] [--no-mongobetween] [--no-results] [--out FILE]
#                     [--quiet-wait S (10)] [--priority NICE (-20)] [--profile] [--only LIST]
#                     [--latency-rounds R (5)] [--latency-seconds S (5)] [--closed-rounds R (5)] [--closed-seconds S (6)]
#                     [--connections N (64): the load generator's connections in the closed-loop and latency runs]
# --only main,closed,latency,tls,large,sweep,threads,uring runs only those sections (all by default). The io_uring
# rows need a second build: cmake -B build-uring -DSHARDSCOPE_IO_URING=ON (BENCH_SHARDSCOPE_URING_BIN).
# latency: added p50/p99 at --rate for issue 29 item 4 — direct, haproxy, shardscope-fwd and -full all kept
# up, R interleaved rounds of one open-loop run each (S s + 2 s warm-up), medians over rounds of each
# round's difference to its direct run; R x 4 x (S + 2) s plus ~5 s start-up (~2.5 min by default).
# closed: closed-loop throughput for issue 29 item 3 — haproxy, shardscope-fwd and -full all kept up, R
# interleaved rounds of one closed-loop run each (S s + 2 s warm-up), medians over rounds of each round's
# ratio to its haproxy run; R x 3 x (S + 2) s (~2 min by default). BENCH_BASELINE_BIN=FILE adds that build's
# forwarding and everything-on rows to the same rounds (before and after in one run; R x 5 x (S + 2) s), and
# its everything-on row to the latency section's rounds.
# --profile adds a perf profile of shardscope (routing + stats + evaluation) under the closed-loop load (~15 s more).
# The machine should be otherwise idle: the script waits up to --quiet-wait seconds for other processes
# to calm down and flags every run during which they used more than 0.15 of a core.
#
# CPU layout (default): the load generator and the upstream share CPU 0, the proxy under test gets CPU 1
# alone (one thread). Every row therefore does the same work on CPU 0, and a proxy that costs less
# than the client+server pair never limits throughput. The open-loop latency runs (main and latency
# sections) move the proxy to CPU 0 as well (see the main section). --no-pin lets the scheduler place everything.
# The script runs in a session of its own whose autogroup gets nice --priority: Linux shares CPU
# between sessions' autogroups, so a process's own nice value does not help against other sessions'
# builds on a shared machine; --priority 0 turns that off.
set -euo pipefail
if [[ -z "${BENCH_RUN_SESSION:-}" ]] && command -v setsid >/dev/null; then
  export BENCH_RUN_SESSION=1
  exec setsid --wait bash "$0" "$@"
fi
here="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cache="${SHARDSCOPE_CACHE:-$HOME/.cache/shardscope}"
sections=main,closed,latency,tls,large,sweep,threads,uring
duration=10 rate=5000 idle=9900 pin=1 ferret=1 mongobetween=1 write_results=1 quick=0 quiet_wait=10 profile=0 priority=-20
latency_rounds=5 latency_seconds=5 closed_rounds=5 closed_seconds=6 connections=64
results="$here/bench/RESULTS.md"
cmdline="bash bench/run.sh $*"
while (($#)); do
  case "$1" in
    --duration) duration="$2"; shift 2 ;;
    --rate) rate="$2"; shift 2 ;;
    --idle) idle="$2"; shift 2 ;;
    --quick) quick=1; duration=4; idle=2000; shift ;;
    --no-pin) pin=0; shift ;;
    --no-ferret) ferret=0; shift ;;
    --no-mongobetween) mongobetween=0; shift ;;
    --no-results) write_results=0; shift ;;
    --out) results="$2"; shift 2 ;;
    --quiet-wait) quiet_wait="$2"; shift 2 ;;
    --profile) profile=1; shift ;;
    --priority) priority="$2"; shift 2 ;;
    --only) sections="$2"; shift 2 ;;
    --latency-rounds) latency_rounds="$2"; shift 2 ;;
    --latency-seconds) latency_seconds="$2"; shift 2 ;;
    --closed-rounds) closed_rounds="$2"; shift 2 ;;
    --closed-seconds) closed_seconds="$2"; shift 2 ;;
    --connections) connections="$2"; shift 2 ;;
    -h|--help) sed -n '2,26p' "$0"; exit 0 ;;
    *) echo "run.sh: unknown option $1" >&2; exit 2 ;;
  esac
done
log() { printf '[bench] %s\n' "$*" >&2; }
for v in latency_rounds latency_seconds closed_rounds closed_seconds connections; do
  [[ "${!v}" =~ ^[1-9][0-9]*$ ]] || { echo "run.sh: --${v/_/-} takes a whole number >= 1" >&2; exit 2; }
done
section() { [[ ",$sections," == *",$1,"* ]]; }
if [[ "$priority" != 0 ]]; then
  echo "$priority" 2>/dev/null >/proc/self/autogroup || log "could not set the autogroup priority to $priority"
fi
autogroup="$(cat /proc/self/autogroup 2>/dev/null || echo '?')"

work="$(mktemp -d /tmp/shardscope-bench.XXXXXX)"
json="$work/results.jsonl"
notes="$work/notes.txt"
: >"$json"
: >"$notes"
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
}
trap cleanup EXIT
note() { echo "$*" >>"$notes"; log "$*"; }
note "scheduling: autogroup ${autogroup#/} (see --priority); load average before the run: $(cut -d' ' -f1-3 /proc/loadavg)"

# --- limits: idle mode needs ~2 fds per connection in a relaying proxy -----------------------------
ulimit -n "$(ulimit -Hn)" 2>/dev/null || true
fd_limit="$(ulimit -n)"
max_idle=$(((fd_limit - 200) / 2))
if ((idle > max_idle)); then
  note "idle connections capped at $max_idle (not $idle): the fd hard limit here is $fd_limit and a 1:1 proxy holds 2 fds per client"
  idle=$max_idle
fi

# --- build -----------------------------------------------------------------------------------------
B="$here/build/bench-loadgen"
log "building the load generator, canned upstream and malloc counter"
cmake -S "$here/bench/loadgen" -B "$B" -DCMAKE_BUILD_TYPE=Release $(command -v ninja >/dev/null && echo -G Ninja) >/dev/null
cmake --build "$B" >/dev/null
LOADGEN="$B/shardscope-loadgen" UPSTREAM="$B/canned-upstream" MALLOC_COUNTER="$B/malloc_counter.so"

SHARDSCOPE="${BENCH_SHARDSCOPE_BIN:-$here/build/shardscope}"
if [[ ! -x "$SHARDSCOPE" && -f "$here/build/CMakeCache.txt" ]]; then
  log "building shardscope"
  cmake --build "$here/build" --target shardscope >/dev/null 2>&1 || true
fi
if [[ -x "$SHARDSCOPE" ]]; then
  # A private copy: a rebuild during the run must not swap the binary between rows.
  cp "$SHARDSCOPE" "$work/shardscope"
  note "shardscope binary: $SHARDSCOPE ($(stat -c %y "$SHARDSCOPE" | cut -d. -f1), commit $(git -C "$here" rev-parse --short HEAD 2>/dev/null || echo '?')$(git -C "$here" diff --quiet HEAD -- proxy protocol routing stats config cli 2>/dev/null || echo ', with uncommitted changes'))"
  SHARDSCOPE="$work/shardscope"
else
  note "shardscope: $SHARDSCOPE is not built: its rows are skipped"
fi

# Before and after in one run: BENCH_BASELINE_BIN (an earlier build) joins the closed section's rounds as
# shardscope-fwd-base and shardscope-full-base, and the latency section's as shardscope-full-base.
SHARDSCOPE_BASE=""
if [[ -n "${BENCH_BASELINE_BIN:-}" ]]; then
  [[ -x "$BENCH_BASELINE_BIN" ]] || { echo "run.sh: BENCH_BASELINE_BIN=$BENCH_BASELINE_BIN is not an executable" >&2; exit 2; }
  cp "$BENCH_BASELINE_BIN" "$work/shardscope-base"
  SHARDSCOPE_BASE="$work/shardscope-base"
  note "baseline binary (closed and latency sections, *-base rows): $BENCH_BASELINE_BIN ($(stat -c %y "$BENCH_BASELINE_BIN" | cut -d. -f1))"
fi

SHARDSCOPE_URING="${BENCH_SHARDSCOPE_URING_BIN:-$here/build-uring/shardscope}"
if section uring && [[ -x "$SHARDSCOPE_URING" ]]; then
  cp "$SHARDSCOPE_URING" "$work/shardscope-uring"
  note "shardscope io_uring build: $SHARDSCOPE_URING ($(stat -c %y "$SHARDSCOPE_URING" | cut -d. -f1))"
  SHARDSCOPE_URING="$work/shardscope-uring"
elif section uring; then
  note "io_uring rows skipped: $SHARDSCOPE_URING is not built (cmake -B build-uring -DSHARDSCOPE_IO_URING=ON)"
fi
section main || { ferret=0; mongobetween=0; }

MONGOBETWEEN="$cache/bin/mongobetween"
if ((mongobetween)) && [[ ! -x "$MONGOBETWEEN" ]] && command -v go >/dev/null; then
  log "installing mongobetween from the Go module proxy"
  mkdir -p "$cache/bin"
  if ! GOBIN="$cache/bin" go install github.com/coinbase/mongobetween@latest >"$work/mb-install.log" 2>&1; then
    # @latest needs the module's version list, which the proxy may refuse; a tagged version in a
    # throw-away module resolves without it.
    mb="$cache/mongobetween-build"
    mkdir -p "$mb"
    printf 'module mbbuild\n\ngo 1.18\n\nrequire github.com/coinbase/mongobetween v0.1.0\n' >"$mb/go.mod"
    printf '//go:build tools\n\npackage tools\n\nimport _ "github.com/coinbase/mongobetween"\n' >"$mb/tools.go"
    (cd "$mb" && go mod tidy && go build -o "$cache/bin/mongobetween" github.com/coinbase/mongobetween) \
      >>"$work/mb-install.log" 2>&1 || true
  fi
fi
if ((mongobetween)) && [[ ! -x "$MONGOBETWEEN" ]]; then
  note "mongobetween: did not install/build from the Go module proxy ($(tail -1 "$work/mb-install.log" 2>/dev/null)): skipped"
  mongobetween=0
fi

FERRETDB=""
for f in "$cache/bin/ferretdb" /tmp/ferret/bin/ferretdb; do [[ -x "$f" ]] && FERRETDB="$f" && break; done
if ((ferret)) && [[ -z "$FERRETDB" ]]; then note "FerretDB binary not found: end-to-end rows skipped"; ferret=0; fi

routing=""
for f in "$here/tests/data/routing/orders_6shards.json" "$here/examples/routing/orders_6shards.json"; do
  [[ -f "$f" ]] && routing="$f" && break
done
if [[ -z "$routing" ]]; then
  routing="$work/orders_6shards.json"
  python3 - "$routing" <<'EOF'
import json, sys
bounds = [None, "C1667", "C3334", "C5000", "C6667", "C8334", None]
chunks = []
for i in range(6):
    lo = {"customerId": {"$minKey": 1} if bounds[i] is None else bounds[i], "orderDate": {"$minKey": 1}}
    hi = {"customerId": {"$maxKey": 1} if bounds[i + 1] is None else bounds[i + 1],
          "orderDate": {"$maxKey": 1} if bounds[i + 1] is None else {"$minKey": 1}}
    chunks.append({"min": lo, "max": hi, "shard": "shard%d" % i})
json.dump({"collections": [{"ns": "shop.orders", "key": {"customerId": 1, "orderDate": 1}, "unique": False,
                            "chunks": chunks}]}, open(sys.argv[1], "w"), indent=1)
EOF
  note "tests/data/routing/orders_6shards.json not found: used a generated 6-shard table for shop.orders {customerId, orderDate}"
fi

# --- helpers ---------------------------------------------------------------------------------------
busy_cores() {  # CPU use of the whole machine over one second, in cores (user+nice+system+irq+softirq+steal)
  local c u1 n1 s1 i1 w1 q1 sq1 st1 u2 n2 s2 i2 w2 q2 sq2 st2
  read -r c u1 n1 s1 i1 w1 q1 sq1 st1 _ </proc/stat
  sleep 1
  read -r c u2 n2 s2 i2 w2 q2 sq2 st2 _ </proc/stat
  local ticks=$(((u2 + n2 + s2 + q2 + sq2 + st2) - (u1 + n1 + s1 + q1 + sq1 + st1)))
  echo "$((ticks * 100 / $(getconf CLK_TCK)))"  # hundredths of a core
}
waited=0
while :; do
  b=$(busy_cores)
  ((b <= 25)) && break
  if ((waited >= quiet_wait)); then
    note "the machine was busy before the run (other processes used $((b))% of a core after waiting ${waited} s): figures are disturbed"
    break
  fi
  ((waited == 0)) && log "waiting for other processes to go quiet (busy: $b% of a core; up to ${quiet_wait} s)"
  sleep 4
  waited=$((waited + 5))
done
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }
wait_port() {  # port, pid, seconds
  local i
  for ((i = 0; i < $3 * 20; i++)); do
    kill -0 "$2" 2>/dev/null || return 1
    (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null && return 0
    sleep 0.05
  done
  return 1
}
cpu_load="" cpu_proxy=""
if ((pin)); then cpu_load="taskset -c 0" cpu_proxy="taskset -c 1"; fi
stop_pid() {
  kill -TERM "$1" 2>/dev/null || true
  local i
  for ((i = 0; i < 50; i++)); do kill -0 "$1" 2>/dev/null || break; sleep 0.1; done
  kill -KILL "$1" 2>/dev/null || true
  wait "$1" 2>/dev/null || true
}
loadgen() { $cpu_load "$LOADGEN" --json-out "$json" "$@"; }

mix_canned="find=70,insert=10,update=10,getmore=10"
mix_ferret="find=70,insert=15,update=15"

# --- canned upstream -------------------------------------------------------------------------------
up_port=$(free_port)
$cpu_load "$UPSTREAM" --listen "127.0.0.1:$up_port" 2>"$work/upstream.log" &
up_pid=$!
pids+=("$up_pid")
wait_port "$up_port" "$up_pid" 5 || { cat "$work/upstream.log" >&2; exit 1; }
upstream_uri="mongodb://127.0.0.1:$up_port/"

# start_proxy KIND PORT -> sets proxy_pid (empty when the proxy cannot run). Variants by suffix:
# -tls (TLS toward clients and toward the upstream at $tls_up_port), -t2 (--threads 2, both CPUs),
# -uring (the SHARDSCOPE_IO_URING build, $SHARDSCOPE_URING); proxy_upstream_port overrides the upstream.
start_proxy() {
  local kind=$1 port=$2 extra=() bin="$SHARDSCOPE" threads=1 upport=${proxy_upstream_port:-$up_port}
  proxy_pid=""
  [[ "$kind" == *-t2* ]] && threads=2
  if [[ "$kind" == *-uring* ]]; then bin="$SHARDSCOPE_URING"; [[ -x "$bin" ]] || return 1; fi
  if [[ "$kind" == *-base ]]; then bin="$SHARDSCOPE_BASE"; [[ -x "$bin" ]] || return 1; fi
  case "$kind" in
    haproxy | haproxy-tls)
      # haproxy-tls: TLS terminated and re-originated, TLS 1.3 with the cipher the load generator and the upstream offer.
      local tls_global="" bind_tls="" server="127.0.0.1:$upport"
      if [[ $kind == haproxy-tls ]]; then
        tls_global="  ssl-default-bind-ciphersuites $tls_suites
  ssl-default-server-ciphersuites $tls_suites
  ssl-default-bind-options ssl-min-ver TLSv1.3
  ssl-default-server-options ssl-min-ver TLSv1.3"
        bind_tls=" ssl crt $work/tls/server.pem"
        server="127.0.0.1:$tls_up_port ssl verify none"
      fi
      cat >"$work/haproxy.cfg" <<EOF
global
  maxconn $((idle + 40))
  nbthread 1
$tls_global
defaults
  mode tcp
  timeout connect 5s
  timeout client 120s
  timeout server 120s
frontend fe
  bind 127.0.0.1:$port$bind_tls
  default_backend be
backend be
  server up $server maxconn $((idle + 40))
EOF
      $cpu_proxy haproxy -db -f "$work/haproxy.cfg" >"$work/$kind.log" 2>&1 &
      ;;
    shardscope-*)
      [[ -x "$bin" ]] || return 1
      local upstream="${proxy_upstream:-mongodb://127.0.0.1:$upport/}"
      if [[ "$kind" == *-tls* ]]; then
        upstream="mongodb://127.0.0.1:$tls_up_port/?tls=true&tlsCAFile=$work/tls/cert.pem"
        extra+=(--tls-cert-file "$work/tls/cert.pem" --tls-key-file "$work/tls/key.pem")
      fi
      if [[ "$kind" == shardscope-full* ]]; then
        extra+=(--routing "$routing" --admin "127.0.0.1:$(free_port)")
      else  # forwarding only: frames parsed and checked, nothing classified or recorded
        extra+=(--stats.enabled false --evaluation.enabled false)
      fi
      local env_prefix=()
      if [[ "$kind" == *-malloc ]]; then
        : >"$work/malloc.log"
        env_prefix=(env "LD_PRELOAD=$MALLOC_COUNTER" "MALLOC_COUNTER_FILE=$work/malloc.log")
      fi
      # shardscope reads SHARDSCOPE_* variables as configuration and rejects unknown ones (SHARDSCOPE_CACHE).
      local cpus=$cpu_proxy
      ((threads > 1 && pin)) && cpus="taskset -c 0,1"
      env -u SHARDSCOPE_CACHE "${env_prefix[@]}" $cpus "$bin" proxy --listen "127.0.0.1:$port" --upstream "$upstream" \
        --threads "$threads" --log-level warn "${extra[@]}" >"$work/$kind.log" 2>&1 &
      ;;
    mongobetween)
      ((mongobetween)) || return 1
      $cpu_proxy "$MONGOBETWEEN" -loglevel warn -network tcp4 "127.0.0.1:$port=$upstream_uri?maxPoolSize=$((idle + 100))" \
        >"$work/$kind.log" 2>&1 &
      ;;
  esac
  proxy_pid=$!
  pids+=("$proxy_pid")
  if ! wait_port "$port" "$proxy_pid" 15; then
    note "$kind: did not start listening ($(tail -2 "$work/$kind.log" | tr '\n' ' '))"
    stop_pid "$proxy_pid"
    proxy_pid=""
    return 1
  fi
  sleep 0.3
}

# --- scenarios -------------------------------------------------------------------------------------
common=(--connections "$connections" --depth 1 --warmup 2)
# closed_and_open KIND [loadgen args]: a closed-loop run on the pinned proxy, then the open-loop latency
# run with the proxy moved to CPU 0 (see below). LABEL overrides the row's label.
closed_and_open() {
  local kind=$1 port
  shift
  port=$(free_port)
  start_proxy "$kind" "$port" || { note "$kind: skipped"; return 0; }
  log "${LABEL:-$kind} (pid $proxy_pid)"
  loadgen --label "${LABEL:-$kind}" --target "127.0.0.1:$port" "${common[@]}" --duration "$duration" --mix "$mix_canned" \
    --watch "proxy=$proxy_pid" --watch "upstream=${up_watch:-$up_pid}" "$@" || note "$kind: throughput run failed"
  if ((open_too)); then
    ((pin)) && taskset -a -p -c 0 "$proxy_pid" >/dev/null
    loadgen --label "${LABEL:-$kind}" --target "127.0.0.1:$port" "${common[@]}" --duration $((duration * 3 / 4)) \
      --rate "$rate" --mix "$mix_canned" --watch "proxy=$proxy_pid" --watch "upstream=${up_watch:-$up_pid}" "$@" \
      || note "$kind: latency run failed"
  fi
  stop_pid "$proxy_pid"
}
open_too=1

if section main; then
log "direct"
loadgen --label direct --target "127.0.0.1:$up_port" "${common[@]}" --duration "$duration" --mix "$mix_canned" \
  --watch "upstream=$up_pid" || true
loadgen --label direct --target "127.0.0.1:$up_port" "${common[@]}" --duration $((duration * 3 / 4)) --rate "$rate" \
  --mix "$mix_canned" --watch "upstream=$up_pid" || true

for kind in haproxy shardscope-fwd shardscope-full mongobetween; do
  port=$(free_port)
  start_proxy "$kind" "$port" || { note "$kind: skipped"; continue; }
  log "$kind (pid $proxy_pid)"
  loadgen --label "$kind" --target "127.0.0.1:$port" "${common[@]}" --duration "$duration" --mix "$mix_canned" \
    --watch "proxy=$proxy_pid" --watch "upstream=$up_pid" || note "$kind: throughput run failed"
  # The latency run puts the proxy on CPU 0 too: at this low rate one core is plenty, and a wake-up on the
  # other vCPU (an IPI; the vCPU may have been idle or running another session's build) would add its own
  # 50-200 µs here, which is the machine's cost, not the proxy's.
  ((pin)) && taskset -a -p -c 0 "$proxy_pid" >/dev/null
  loadgen --label "$kind" --target "127.0.0.1:$port" "${common[@]}" --duration $((duration * 3 / 4)) --rate "$rate" \
    --mix "$mix_canned" --watch "proxy=$proxy_pid" --watch "upstream=$up_pid" || note "$kind: latency run failed"
  ((pin)) && taskset -a -p -c 1 "$proxy_pid" >/dev/null
  # Idle: the clients' RSS is read 2 s after the last hello (shardscope parks a connection idle for 0.5 s).
  loadgen --label "$kind" --target "127.0.0.1:$port" --idle "$idle" --idle-hold 2 --watch "proxy=$proxy_pid" \
    || note "$kind: idle-connection run stopped early"
  if ! kill -0 "$proxy_pid" 2>/dev/null; then
    st=0
    wait "$proxy_pid" 2>/dev/null || st=$?
    note "$kind: the proxy process died during the run (exit status $st$( ((st > 128)) && echo ", signal $((st - 128))"); log: $(tail -2 "$work/$kind.log" | tr '\n' ' '))"
  fi
  stop_pid "$proxy_pid"
done

# Allocations per operation on the forward path (a short run under the LD_PRELOAD counter).
for kind in shardscope-fwd-malloc shardscope-full-malloc; do
  port=$(free_port)
  start_proxy "$kind" "$port" || continue
  log "$kind (pid $proxy_pid)"
  loadgen --label "$kind" --target "127.0.0.1:$port" "${common[@]}" --duration 4 --mix "$mix_canned" \
    --watch "proxy=$proxy_pid" --malloc-pid "$proxy_pid" --malloc-file "$work/malloc.log" || true
  stop_pid "$proxy_pid"
done

fi  # section main

# --- issue 29 item 4: added tail latency, interleaved rounds -------------------------------------------
# One open-loop run per target measures a few seconds at one moment, and this VM stalls for milliseconds
# at random moments, so a single run's p99 measures the VM. Here all four targets stay up for the whole
# section (each proxy on its own port) and take turns: R rounds of one short open-loop run per target,
# the order changing per round. report.py subtracts each round's direct run from the same round's proxy
# runs and takes medians over rounds. CPU placement as in the main section's open-loop runs: the load
# generator, the upstream and the proxy under test all on CPU 0 (the idle proxies wait there too).

# latency_order N ROUND: the target indices (0..N-1) of round ROUND (0-based), space-separated. A row of
# a Williams square: the base 0, 1, N-1, 2, N-2, ... with ROUND added to every entry (mod N). A plain
# rotation would keep each target's neighbour (direct always right before haproxy); with this, over N
# rounds every target comes right after every other target once (exactly so for even N).
latency_order() {
  local n=$1 r=$2 base=(0) lo=1 hi=$(($1 - 1)) i out=()
  while ((${#base[@]} < n)); do
    base+=("$lo"); lo=$((lo + 1))
    ((${#base[@]} < n)) && { base+=("$hi"); hi=$((hi - 1)); }
  done
  for i in "${base[@]}"; do out+=($(((i + r) % n))); done
  echo "${out[*]}"
}

# each_round_in_turn R FN: R rounds, each calling FN INDEX ROUND SLOT for every index of the caller's `kinds`, in
# that round's order (latency_order).
each_round_in_turn() {
  local rounds=$1 fn=$2 r i slot
  for ((r = 1; r <= rounds; r++)); do
    slot=0
    for i in $(latency_order "${#kinds[@]}" $((r - 1))); do
      slot=$((slot + 1))
      "$fn" "$i" "$r" "$slot"
    done
  done
}

# stop_targets FIRST PREFIX WHAT: stops the caller's proxies ppids[FIRST..], noting any that died during WHAT.
stop_targets() {
  local i
  for ((i = $1; i < ${#kinds[@]}; i++)); do
    kill -0 "${ppids[i]}" 2>/dev/null || note "$2-${kinds[i]}: the proxy process died during $3"
    stop_pid "${ppids[i]}"
  done
}

# latency_run KIND PORT PROXY_PID ROUND SLOT: one open-loop run, tagged with its round and its place in
# the round. PROXY_PID is empty for direct. The watched processes make other_cores the machine's other load.
latency_run() {
  local kind=$1 port=$2 ppid=$3 watch=(--watch "upstream=$up_pid")
  [[ -n "$ppid" ]] && watch=(--watch "proxy=$ppid" "${watch[@]}")
  log "lat-$kind, round $4 (run $5 of the round)"
  loadgen --label "lat-$kind" --tag "round=$4 slot=$5" --target "127.0.0.1:$port" "${common[@]}" \
    --duration "$latency_seconds" --rate "$rate" --mix "$mix_canned" "${watch[@]}" \
    || note "lat-$kind: round $4 run failed"
}

latency_section() {
  local kinds=(direct) ports=("$up_port") ppids=("") kind port targets=(haproxy shardscope-fwd shardscope-full)
  [[ -n "$SHARDSCOPE_BASE" ]] && targets+=(shardscope-full-base)
  for kind in "${targets[@]}"; do
    port=$(free_port)
    start_proxy "$kind" "$port" || { note "lat-$kind: did not start, left out of the latency rounds"; continue; }
    ((pin)) && taskset -a -p -c 0 "$proxy_pid" >/dev/null
    kinds+=("$kind") ports+=("$port") ppids+=("$proxy_pid")
  done
  log "latency: ${latency_rounds} rounds x ${#kinds[@]} targets x (${latency_seconds} s + 2 s warm-up)"
  latency_turn() { latency_run "${kinds[$1]}" "${ports[$1]}" "${ppids[$1]}" "$2" "$3"; }
  each_round_in_turn "$latency_rounds" latency_turn
  stop_targets 1 lat "the latency rounds"
}
if section latency; then latency_section; fi

# --- issue 29 item 3: closed-loop throughput, interleaved rounds ----------------------------------------
# This VM's speed drifts by 10-30 % within minutes (the same binary, runs a minute apart), and the main
# section measures haproxy, then forwarding, then everything on, one after the other: the drift goes into
# their ratios. Here the three proxies stay up for the whole section (each on its own port, all pinned to
# CPU 1 as in the main section; the idle ones wait in epoll) and take turns: R rounds of one closed-loop run
# each (S s after the 2 s warm-up), the order changing per round as in the latency section. report.py takes
# each ratio within its round and the median over rounds.
# closed_section [UPSTREAM_PID TLS_SUFFIX LOADGEN_ARGS...]: the plain rows by default; the TLS section calls it
# with its upstream, "-tls" and --tls.
closed_section() {
  local watch_up=${1:-$up_pid} sfx=${2:-} kinds=() ports=() ppids=() kind port targets
  (($# >= 2)) && shift 2
  targets=(haproxy$sfx shardscope-fwd$sfx shardscope-full$sfx)
  [[ -n "$SHARDSCOPE_BASE" ]] && targets+=(shardscope-fwd$sfx-base shardscope-full$sfx-base)
  for kind in "${targets[@]}"; do
    port=$(free_port)
    start_proxy "$kind" "$port" || { note "closed-$kind: did not start, left out of the closed-loop rounds"; continue; }
    kinds+=("$kind") ports+=("$port") ppids+=("$proxy_pid")
  done
  log "closed loop: ${closed_rounds} rounds x ${#kinds[@]} targets x (${closed_seconds} s + 2 s warm-up)"
  local loadgen_args=("$@")
  closed_turn() {
    log "closed-${kinds[$1]}, round $2 (run $3 of the round)"
    loadgen --label "closed-${kinds[$1]}" --tag "round=$2 slot=$3" --target "127.0.0.1:${ports[$1]}" "${common[@]}" \
      --duration "$closed_seconds" --mix "$mix_canned" --watch "proxy=${ppids[$1]}" --watch "upstream=$watch_up" \
      "${loadgen_args[@]}" || note "closed-${kinds[$1]}: round $2 run failed"
  }
  each_round_in_turn "$closed_rounds" closed_turn
  stop_targets 0 closed "the closed-loop rounds"
}
if section closed; then closed_section; fi

# --- issue 19: TLS on both hops --------------------------------------------------------------------
# Client -> TLS -> proxy -> TLS -> canned upstream; TLS 1.3 with one cipher suite offered by the load
# generator and accepted by the upstream, so every hop of every row runs the same cipher.
tls_suites="TLS_AES_128_GCM_SHA256"
if section tls; then
  mkdir -p "$work/tls"
  openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout "$work/tls/key.pem" \
    -out "$work/tls/cert.pem" -days 2 -subj /CN=localhost -addext "subjectAltName=DNS:localhost,IP:127.0.0.1" 2>/dev/null
  cat "$work/tls/cert.pem" "$work/tls/key.pem" >"$work/tls/server.pem"
  tls_up_port=$(free_port)
  $cpu_load "$UPSTREAM" --listen "127.0.0.1:$tls_up_port" --tls-cert "$work/tls/cert.pem" --tls-key "$work/tls/key.pem" \
    --tls-ciphersuites "$tls_suites" 2>"$work/upstream-tls.log" &
  tls_up_pid=$!
  pids+=("$tls_up_pid")
  wait_port "$tls_up_port" "$tls_up_pid" 5 || { cat "$work/upstream-tls.log" >&2; exit 1; }
  log "direct-tls"
  loadgen --label direct-tls --tls --target "127.0.0.1:$tls_up_port" "${common[@]}" --duration "$duration" \
    --mix "$mix_canned" --watch "upstream=$tls_up_pid" || true
  loadgen --label direct-tls --tls --target "127.0.0.1:$tls_up_port" "${common[@]}" --duration $((duration * 3 / 4)) \
    --rate "$rate" --mix "$mix_canned" --watch "upstream=$tls_up_pid" || true
  for kind in haproxy-tls shardscope-fwd-tls shardscope-full-tls; do
    up_watch=$tls_up_pid closed_and_open "$kind" --tls
  done
  # The same three in interleaved rounds, as the closed section does for plain TCP (issue 29 item 3).
  closed_section "$tls_up_pid" -tls --tls
  port=$(free_port)
  if start_proxy shardscope-full-tls-malloc "$port"; then
    log "shardscope-full-tls-malloc (pid $proxy_pid)"
    loadgen --label shardscope-full-tls-malloc --tls --target "127.0.0.1:$port" "${common[@]}" --duration 4 \
      --mix "$mix_canned" --watch "proxy=$proxy_pid" --malloc-pid "$proxy_pid" --malloc-file "$work/malloc.log" || true
    stop_pid "$proxy_pid"
  fi
fi

# --- issue 19: 16 MB messages ----------------------------------------------------------------------
# One connection sends 16 MB inserts (or finds answered by a 16 MB batch) back to back; a fresh proxy
# per row, its RSS before the row and its peak RSS (VmHWM) after give the memory per in-flight message.
big=16000000
if section large; then
  big_up_port=$(free_port)
  $cpu_load "$UPSTREAM" --listen "127.0.0.1:$big_up_port" --batch-bytes "$big" 2>"$work/upstream-big.log" &
  big_up_pid=$!
  pids+=("$big_up_pid")
  wait_port "$big_up_port" "$big_up_pid" 5 || { cat "$work/upstream-big.log" >&2; exit 1; }
  for kind in direct haproxy shardscope-fwd shardscope-full; do
    for what in insert insertmany reply; do
      args=(--mix insert=100 --insert-bytes "$big")
      [[ $what == insertmany ]] && args+=(--insert-docs 1024)  # an insertMany batch: 1,024 documents of ~16 KB
      [[ $what == reply ]] && args=(--mix find=100)
      label="large-$what-$kind" port=$big_up_port watch=()
      if [[ $kind != direct ]]; then
        port=$(free_port)
        proxy_upstream_port=$big_up_port start_proxy "$kind" "$port" || continue
        echo "{\"label\":\"$label\",\"mode\":\"baseline\",\"rss_kib\":$(awk '/^VmRSS/{print $2}' /proc/$proxy_pid/status)}" >>"$json"
        watch=(--watch "proxy=$proxy_pid")
      fi
      log "$label"
      loadgen --label "$label" --target "127.0.0.1:$port" --connections 1 --depth 1 --warmup 1 \
        --duration $((duration / 2)) "${args[@]}" "${watch[@]}" --watch "upstream=$big_up_pid" || note "$label: failed"
      [[ $kind != direct ]] && stop_pid "$proxy_pid"
    done
  done
fi

# --- issue 19: reply-size sweep --------------------------------------------------------------------
# Finds only, answered by cursor batches of about 1 KiB .. 4 MiB of order documents; 16 connections.
if section sweep; then
  for bytes in 1024 16384 262144 4194304; do
    sw_port=$(free_port)
    $cpu_load "$UPSTREAM" --listen "127.0.0.1:$sw_port" --batch-bytes "$bytes" 2>"$work/upstream-sweep.log" &
    sw_pid=$!
    pids+=("$sw_pid")
    wait_port "$sw_port" "$sw_pid" 5 || continue
    for kind in direct haproxy shardscope-fwd shardscope-full; do
      label="sweep-$bytes-$kind" port=$sw_port watch=()
      if [[ $kind != direct ]]; then
        port=$(free_port)
        proxy_upstream_port=$sw_port start_proxy "$kind" "$port" || continue
        watch=(--watch "proxy=$proxy_pid")
      fi
      log "$label"
      loadgen --label "$label" --target "127.0.0.1:$port" --connections 16 --depth 1 --warmup 1 \
        --duration $((duration / 2)) --mix find=100 "${watch[@]}" --watch "upstream=$sw_pid" || note "$label: failed"
      [[ $kind != direct ]] && stop_pid "$proxy_pid"
    done
    stop_pid "$sw_pid"
  done
fi

# --- issue 19: threads and io_uring (closed loop, the standard mix) --------------------------------
open_too=0
if section threads; then
  for kind in shardscope-full shardscope-full-t2 shardscope-fwd-t2; do LABEL="threads-$kind" closed_and_open "$kind"; done
fi
if section uring && [[ -x "$SHARDSCOPE_URING" ]]; then
  # Alternating, so both builds meet the same machine load.
  for kind in shardscope-fwd shardscope-fwd-uring shardscope-full shardscope-full-uring; do
    LABEL="ab-$kind" closed_and_open "$kind"
  done
  port=$(free_port)
  if start_proxy shardscope-full-uring-malloc "$port"; then
    loadgen --label shardscope-full-uring-malloc --target "127.0.0.1:$port" "${common[@]}" --duration 4 \
      --mix "$mix_canned" --watch "proxy=$proxy_pid" --malloc-pid "$proxy_pid" --malloc-file "$work/malloc.log" || true
    stop_pid "$proxy_pid"
  fi
fi

# End to end: FerretDB (SQLite) as the upstream, direct and through shardscope with everything on.
# Each row gets a fresh FerretDB: its finds scan the collection, so a database that earlier rows
# filled with inserts would make later rows slower.
if ((ferret)); then
  for row in ferret-direct ferret-shardscope-full; do
    fdir="$work/ferret-$row"
    [[ -d /dev/shm && -w /dev/shm ]] && fdir="$(mktemp -d /dev/shm/shardscope-bench-ferret.XXXXXX)"  # no fsync waits
    mkdir -p "$fdir"
    fport=$(free_port)
    $cpu_load "$FERRETDB" --handler=sqlite --sqlite-url="file:$fdir/" --listen-addr="127.0.0.1:$fport" \
      --debug-addr=- --telemetry=disable --log-level=error >"$work/$row-ferretdb.log" 2>&1 &
    ferret_pid=$!
    pids+=("$ferret_pid")
    if wait_port "$fport" "$ferret_pid" 20; then
      fcommon=(--connections 16 --depth 1 --warmup 1 --duration 5 --mix "$mix_ferret" --watch "upstream=$ferret_pid")
      if [[ "$row" == ferret-direct ]]; then
        log "ferretdb direct"
        loadgen --label "$row" --target "127.0.0.1:$fport" "${fcommon[@]}" || true
      else
        port=$(free_port)
        if proxy_upstream="mongodb://127.0.0.1:$fport/" start_proxy shardscope-full "$port"; then
          log "ferretdb through shardscope-full"
          loadgen --label "$row" --target "127.0.0.1:$port" "${fcommon[@]}" --watch "proxy=$proxy_pid" || true
          stop_pid "$proxy_pid"
        fi
      fi
    else
      note "FerretDB did not start ($(tail -2 "$work/$row-ferretdb.log" | tr '\n' ' '))"
    fi
    stop_pid "$ferret_pid"
    [[ "$fdir" == /dev/shm/* ]] && rm -rf "$fdir"
  done
fi

# Optional: where shardscope (routing + stats + evaluation) spends its CPU under the closed-loop load, on plain
# TCP and, when the TLS section ran, with TLS on both hops (one profile per kind).
profile_kinds=(shardscope-full)
if section tls; then profile_kinds+=(shardscope-full-tls); fi
if ((profile)) && command -v perf >/dev/null; then
  clean() { grep -v '^#' | grep -v '^$' | sed -E 's/ +- +- *$//; s/ +$//' | cut -c1-150; }
  for pkind in "${profile_kinds[@]}"; do
    port=$(free_port)
    start_proxy "$pkind" "$port" || continue
    log "profiling $pkind (pid $proxy_pid)"
    tls_flag=()
    [[ $pkind == *-tls ]] && tls_flag=(--tls)
    $cpu_load "$LOADGEN" --label profile "${tls_flag[@]}" --target "127.0.0.1:$port" "${common[@]}" --duration 12 \
      --mix "$mix_canned" >/dev/null &
    lg=$!
    sleep 3
    perf record -F 1999 -g -p "$proxy_pid" -o "$work/perf-$pkind.data" -- sleep 8 >/dev/null 2>&1 || true
    wait "$lg" || true
    stop_pid "$proxy_pid"
    perf report -i "$work/perf-$pkind.data" --no-children --sort dso --stdio -g none 2>/dev/null | clean | head -8 \
      >"$work/profile-dso-$pkind.txt" || true
    perf report -i "$work/perf-$pkind.data" --no-children --sort dso,symbol --percent-limit 0.7 --stdio -g none \
      2>/dev/null | clean | head -30 >"$work/profile-$pkind.txt" || true
    perf report -i "$work/perf-$pkind.data" --children --sort symbol --stdio -g none 2>/dev/null | clean \
      | grep -E '(shardscope::|__send|__libc_recv|epoll_wait|malloc|_int_free|sock_def_readable|net_rx_action|SSL_)' \
      | head -25 >"$work/profile-children-$pkind.txt" || true
    cp "$work/perf-$pkind.data" "$here/build/bench-loadgen/last-perf-$pkind.data" 2>/dev/null || true
  done
fi

# --- report ----------------------------------------------------------------------------------------
BENCH_CONNECTIONS="$connections" python3 "$here/bench/loadgen/report.py" "$json" "$notes" "$cmdline" "$pin" "$rate" "$idle" "$duration" \
  >"$work/report.md"
for pkind in "${profile_kinds[@]}"; do
  [[ -s "$work/profile-$pkind.txt" ]] || continue
  { echo "## Profile: $pkind under the closed-loop load"
    echo
    echo '`perf record -F 1999 -g -p PID` for 8 s (the proxy only). Self time by object:'
    echo; echo '```'; cat "$work/profile-dso-$pkind.txt"; echo '```'; echo
    echo 'Self time by symbol (over 0.7 %):'
    echo; echo '```'; cat "$work/profile-$pkind.txt"; echo '```'; echo
    echo 'Inclusive time of selected symbols (children; user frames need frame pointers, so these undercount):'
    echo; echo '```'; cat "$work/profile-children-$pkind.txt"; echo '```'; echo
  } >>"$work/report.md"
done
cat "$work/report.md"
if ((write_results)); then
  # Hand-written sections (profile findings) after the marker line survive a new run.
  marker='<!-- end of generated results -->'
  { cat "$work/report.md"; echo; echo "$marker"
    [[ -f "$results" ]] && grep -qF "$marker" "$results" && sed -n "/^$marker\$/,\$p" "$results" | tail -n +2 || true
  } >"$work/RESULTS.md"
  cp "$work/RESULTS.md" "$results"
  cp "$json" "$here/build/bench-loadgen/last-results.jsonl"
  log "wrote $results (raw: build/bench-loadgen/last-results.jsonl)"
fi
