#!/bin/bash
# usage: bash bench/callgrind_per_op.sh fwd|full SHARDSCOPE_BIN PORT_BASE OUT_PREFIX (issue 29: instructions per operation)
#   Runs the proxy under callgrind with the bench's closed-loop load (CONNS connections, default 16; 6 s,
#   find=70,insert=10,update=10,getmore=10) and prints ops done; profile in OUT_PREFIX.<kind>.out*
#   Instructions per op = (inclusive Ir of a function) / (ops/s * 6).
#   CALLGRIND_EXTRA="--cache-sim=yes" adds simulated cache misses (D1mr/D1mw/DLmr/DLmw) per function.
#   LOAD=insertmany: instead, one connection sending inserts of 1,024 documents of ~16 KB (the 16 MB
#   insertMany row of bench/run.sh's large section) for 10 s; "ops" are then messages (Ir / (ops/s * 10)).
set -u
B="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)/build/bench-loadgen"
kind=$1 S=$2 P=$3 OUT=$4
# The load generator and canned upstream, built as bench/run.sh builds them.
cmake -S "$(dirname "$B")/../bench/loadgen" -B "$B" -DCMAKE_BUILD_TYPE=Release $(command -v ninja >/dev/null && echo -G Ninja) >/dev/null &&
  cmake --build "$B" >/dev/null || { echo "building $B failed" >&2; exit 1; }
load=(--connections ${CONNS:-16} --duration 6 --mix find=70,insert=10,update=10,getmore=10) up_args=()
if [[ ${LOAD:-} == insertmany ]]; then
  load=(--connections 1 --duration 10 --mix insert=100 --insert-bytes 16000000 --insert-docs 1024)
  up_args=(--batch-bytes 16000000)
fi
$B/canned-upstream --listen 127.0.0.1:$P "${up_args[@]}" 2>/dev/null & up=$!
extra=()
if [[ $kind == fwd ]]; then extra=(--stats.enabled false --evaluation.enabled false); else extra=(--routing $(dirname "$B")/../tests/data/routing/orders_6shards.json --admin 127.0.0.1:$((P+2))); fi
rm -f $OUT.$kind.out*
env -u SHARDSCOPE_CACHE valgrind --tool=callgrind --callgrind-out-file=$OUT.$kind.out --dump-instr=no ${CALLGRIND_EXTRA:-} $S proxy --listen 127.0.0.1:$((P+1)) --upstream mongodb://127.0.0.1:$P/ --threads 1 --log-level warn "${extra[@]}" >$OUT.$kind.proxy.log 2>&1 & px=$!
for i in $(seq 300); do sleep 0.2; ss -ltn | grep -q 127.0.0.1:$((P+1)) && break; done
sleep 1
callgrind_control -z $px >/dev/null 2>&1
$B/shardscope-loadgen --label $kind --target 127.0.0.1:$((P+1)) --depth 1 --warmup 0 "${load[@]}" > $OUT.$kind.lg.txt 2>&1
callgrind_control -d $px >/dev/null 2>&1
sleep 1
kill $px; wait $px; kill $up; wait $up
grep -E "ops/s" $OUT.$kind.lg.txt | head -3
# Messages counted from the bytes (ops/s is rounded to a whole number, a tenth of the 10 s count).
[[ ${LOAD:-} == insertmany ]] && grep -oE "[0-9.]+ MB/s sent" $OUT.$kind.lg.txt | awk '{printf "messages: %.1f (MB/s sent x 10 s / 16 MB)\n", $1 * 10 / 16}'
echo "profile: $(ls -S $OUT.$kind.out* | head -1)  (callgrind_annotate --inclusive=yes FILE)"
