# Sourced by the bench scripts that drive one proxy by hand (callgrind_per_op.sh, thread_cpu.sh):
# builds the load generator and canned upstream as bench/run.sh builds them (into $B), and sets the
# load they run. LOAD=insertmany: bench/run.sh's 16 MB insertMany row (one connection, inserts of
# 1,024 documents of ~16 KB, the upstream answering with 16 MB batches); otherwise the bench's mix on
# MIX_CONNECTIONS connections. `load` and `upstream_args` hold the arguments; `per_message` is 1 for
# the insertMany, whose operations are counted from the bytes sent (messages_from LOADGEN_OUTPUT SECONDS).
B="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)/build/bench-loadgen"
cmake -S "$(dirname "$B")/../bench/loadgen" -B "$B" -DCMAKE_BUILD_TYPE=Release $(command -v ninja >/dev/null && echo -G Ninja) >/dev/null &&
  cmake --build "$B" >/dev/null || { echo "building $B failed" >&2; exit 1; }
routing_file="$(dirname "$B")/../tests/data/routing/orders_6shards.json"
if [[ ${LOAD:-} == insertmany ]]; then
  load=(--connections 1 --mix insert=100 --insert-bytes 16000000 --insert-docs 1024)
  upstream_args=(--batch-bytes 16000000)
  per_message=1
else
  load=(--connections "${MIX_CONNECTIONS:-16}" --mix find=70,insert=10,update=10,getmore=10)
  upstream_args=()
  per_message=0
fi
# Messages of the insertMany a load generator run sent, from its bytes (its ops/s is a whole number,
# too coarse at a few messages per second).
messages_from() { grep -oE "[0-9.]+ MB/s sent" <<<"$1" | awk -v d="$2" '{printf "%.1f", $1 * d / 16}'; }
