#!/bin/bash
# usage: bash bench/thread_cpu.sh fwd|noeval|full SHARDSCOPE_BIN PORT_BASE [SECONDS (8)]  (issue 29)
#   The proxy's CPU per operation, thread by thread (utime + stime from /proc/PID/task/*/stat around one
#   loadgen run), beside the run's ops/s: where a setup's cost goes (event loop or evaluation worker),
#   which the whole process's figure in bench/run.sh does not split. The proxy runs on CPU 1, the canned
#   upstream and the load generator on CPU 0, as bench/run.sh places them.
#   fwd: statistics and evaluation off; noeval: everything on but the evaluation; full: everything on.
#   LOAD=insertmany: one connection sending inserts of 1,024 documents of ~16 KB (bench/run.sh's 16 MB
#   insertMany row), figures per message; default: the closed-loop mix on 64 connections.
set -u
kind=$1 S=$2 P=$3 D=${4:-8}
B="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)/build/bench-loadgen"
cmake -S "$(dirname "$B")/../bench/loadgen" -B "$B" -DCMAKE_BUILD_TYPE=Release $(command -v ninja >/dev/null && echo -G Ninja) >/dev/null &&
  cmake --build "$B" >/dev/null || { echo "building $B failed" >&2; exit 1; }
load=(--connections 64 --mix find=70,insert=10,update=10,getmore=10) up_args=() unit="µs/op" scale=1000000
if [[ ${LOAD:-} == insertmany ]]; then
  load=(--connections 1 --mix insert=100 --insert-bytes 16000000 --insert-docs 1024)
  up_args=(--batch-bytes 16000000) unit="ms/msg" scale=1000
fi
routing="$(dirname "$B")/../tests/data/routing/orders_6shards.json"
case $kind in
  fwd) extra=(--stats.enabled false --evaluation.enabled false) ;;
  noeval) extra=(--routing "$routing" --admin 127.0.0.1:$((P + 2)) --evaluation.enabled false) ;;
  full) extra=(--routing "$routing" --admin 127.0.0.1:$((P + 2))) ;;
  *) echo "thread_cpu.sh: the kind is fwd, noeval or full" >&2; exit 2 ;;
esac
taskset -c 0 "$B/canned-upstream" --listen 127.0.0.1:$P "${up_args[@]}" 2>/dev/null & up=$!
env -u SHARDSCOPE_CACHE taskset -c 1 "$S" proxy --listen 127.0.0.1:$((P + 1)) --upstream mongodb://127.0.0.1:$P/ --threads 1 \
  --log-level warn "${extra[@]}" >/dev/null 2>&1 & px=$!
trap 'kill $px $up 2>/dev/null; wait $px $up 2>/dev/null' EXIT
for _ in $(seq 100); do sleep 0.1; ss -ltn | grep -q "127.0.0.1:$((P + 1)) " && break; done
run() { taskset -c 0 "$B/shardscope-loadgen" --label "$kind" --target 127.0.0.1:$((P + 1)) --depth 1 --warmup 0 "${load[@]}" --duration "$1"; }
run 2 >/dev/null 2>&1  # warm-up: connections, buffers, the evaluation's first fields
ticks() { for t in /proc/$px/task/*; do awk -v t="${t##*/}" '{print t, $14 + $15}' "$t/stat"; done | sort; }
before=$(ticks)
out=$(run "$D" 2>&1)
after=$(ticks)
ops=$(grep -oE "[0-9.]+ MB/s sent" <<<"$out" | awk -v d="$D" '{print $1 * d / 16}')  # insertmany: from the bytes
[[ ${LOAD:-} == insertmany ]] || ops=$(grep -oE "[0-9]+ ops/s" <<<"$out" | head -1 | awk -v d="$D" '{print $1 * d}')
echo "$kind: $(grep -oE "[0-9]+ ops/s" <<<"$out" | head -1), $(grep -oE "[0-9.]+ MB/s sent" <<<"$out")"
hz=$(getconf CLK_TCK)
join <(echo "$before") <(echo "$after") | awk -v px="$px" -v ops="$ops" -v hz="$hz" -v s="$scale" -v unit="$unit" '
  { d = $3 - $2; if (d > 0) printf "  %-12s %.2f %s\n", ($1 == px ? "event loop" : "thread " $1), d / hz * s / ops, unit; total += d }
  END { printf "  %-12s %.2f %s\n", "process", total / hz * s / ops, unit }'
