#!/bin/bash
# usage: bash bench/thread_cpu.sh fwd|noeval|full SHARDSCOPE_BIN PORT_BASE [SECONDS (8)]  (issue 29)
#   The proxy's CPU per operation, thread by thread (utime + stime, and each apart, from /proc/PID/task/*/stat around one
#   loadgen run), beside the run's ops/s: where a setup's cost goes (event loop or evaluation worker),
#   which the whole process's figure in bench/run.sh does not split. The proxy runs on CPU 1, the canned
#   upstream and the load generator on CPU 0, as bench/run.sh places them.
#   fwd: statistics and evaluation off; noeval: everything on but the evaluation; full: everything on.
#   LOAD=insertmany: one connection sending inserts of 1,024 documents of ~16 KB (bench/run.sh's 16 MB
#   insertMany row), figures per message; default: the closed-loop mix on 64 connections.
set -u
kind=$1 S=$2 P=$3 D=${4:-8}
MIX_CONNECTIONS=64 source "$(dirname "${BASH_SOURCE[0]}")/one_proxy_load.sh"
unit="µs/op" scale=1000000
[[ $per_message == 1 ]] && unit="ms/msg" scale=1000
case $kind in
  fwd) extra=(--stats.enabled false --evaluation.enabled false) ;;
  noeval) extra=(--routing "$routing_file" --admin 127.0.0.1:$((P + 2)) --evaluation.enabled false) ;;
  full) extra=(--routing "$routing_file" --admin 127.0.0.1:$((P + 2))) ;;
  *) echo "thread_cpu.sh: the kind is fwd, noeval or full" >&2; exit 2 ;;
esac
taskset -c 0 "$B/canned-upstream" --listen 127.0.0.1:$P "${upstream_args[@]}" 2>/dev/null & up=$!
env -u SHARDSCOPE_CACHE taskset -c 1 "$S" proxy --listen 127.0.0.1:$((P + 1)) --upstream mongodb://127.0.0.1:$P/ --threads 1 \
  --log-level warn "${extra[@]}" >/dev/null 2>&1 & px=$!
trap 'kill $px $up 2>/dev/null; wait $px $up 2>/dev/null' EXIT
for _ in $(seq 100); do sleep 0.1; ss -ltn | grep -q "127.0.0.1:$((P + 1)) " && break; done
run() { taskset -c 0 "$B/shardscope-loadgen" --label "$kind" --target 127.0.0.1:$((P + 1)) --depth 1 --warmup 0 "${load[@]}" --duration "$1"; }
run 2 >/dev/null 2>&1  # warm-up: connections, buffers, the evaluation's first fields
ticks() { for t in /proc/$px/task/*; do awk -v t="${t##*/}" '{print t, $14, $15}' "$t/stat"; done | sort; }
before=$(ticks)
out=$(run "$D" 2>&1)
after=$(ticks)
ops=$(grep -oE "[0-9]+ ops/s" <<<"$out" | head -1 | awk -v d="$D" '{print $1 * d}')
[[ $per_message == 1 ]] && ops=$(messages_from "$out" "$D")
echo "$kind: $(grep -oE "[0-9]+ ops/s" <<<"$out" | head -1), $(grep -oE "[0-9.]+ MB/s sent" <<<"$out")"
hz=$(getconf CLK_TCK)
join <(echo "$before") <(echo "$after") | awk -v px="$px" -v ops="$ops" -v hz="$hz" -v s="$scale" -v unit="$unit" '
  { u = $4 - $2; k = $5 - $3; if (u + k > 0) printf "  %-12s %.2f %s (user %.2f, system %.2f)\n", ($1 == px ? "event loop" : "thread " $1), (u + k) / hz * s / ops, unit, u / hz * s / ops, k / hz * s / ops; total += u + k }
  END { printf "  %-12s %.2f %s\n", "process", total / hz * s / ops, unit }'
