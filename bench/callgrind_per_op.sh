#!/bin/bash
# usage: bash bench/callgrind_per_op.sh fwd|full SHARDSCOPE_BIN PORT_BASE OUT_PREFIX (issue 29: instructions per operation)
#   Runs the proxy under callgrind with the bench's closed-loop load (CONNS connections, default 16; 6 s,
#   find=70,insert=10,update=10,getmore=10) and prints ops done; profile in OUT_PREFIX.<kind>.out*
#   Instructions per op = (inclusive Ir of a function) / (ops/s * 6).
#   CALLGRIND_EXTRA="--cache-sim=yes" adds simulated cache misses (D1mr/D1mw/DLmr/DLmw) per function.
#   LOAD=insertmany: instead, one connection sending inserts of 1,024 documents of ~16 KB (the 16 MB
#   insertMany row of bench/run.sh's large section) for 10 s; "ops" are then messages (Ir / (ops/s * 10)).
set -u
kind=$1 S=$2 P=$3 OUT=$4
MIX_CONNECTIONS=${CONNS:-16} source "$(dirname "${BASH_SOURCE[0]}")/one_proxy_load.sh"
seconds=6
[[ $per_message == 1 ]] && seconds=10
$B/canned-upstream --listen 127.0.0.1:$P "${upstream_args[@]}" 2>/dev/null & up=$!
extra=()
if [[ $kind == fwd ]]; then extra=(--stats.enabled false --evaluation.enabled false); else extra=(--routing "$routing_file" --admin 127.0.0.1:$((P+2))); fi
rm -f $OUT.$kind.out*
env -u SHARDSCOPE_CACHE valgrind --tool=callgrind --callgrind-out-file=$OUT.$kind.out --dump-instr=no ${CALLGRIND_EXTRA:-} $S proxy --listen 127.0.0.1:$((P+1)) --upstream mongodb://127.0.0.1:$P/ --threads 1 --log-level warn "${extra[@]}" >$OUT.$kind.proxy.log 2>&1 & px=$!
for i in $(seq 300); do sleep 0.2; ss -ltn | grep -q 127.0.0.1:$((P+1)) && break; done
sleep 1
callgrind_control -z $px >/dev/null 2>&1
$B/shardscope-loadgen --label $kind --target 127.0.0.1:$((P+1)) --depth 1 --warmup 0 "${load[@]}" --duration $seconds > $OUT.$kind.lg.txt 2>&1
callgrind_control -d $px >/dev/null 2>&1
sleep 1
kill $px; wait $px; kill $up; wait $up
grep -E "ops/s" $OUT.$kind.lg.txt | head -3
[[ $per_message == 1 ]] && echo "messages: $(messages_from "$(cat $OUT.$kind.lg.txt)" $seconds) (MB/s sent x $seconds s / 16 MB)"
# The dump taken right after the load (-d): the file written at exit holds only what came after it.
echo "profile: $OUT.$kind.out.1  (callgrind_annotate --inclusive=yes FILE)"
