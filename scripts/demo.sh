#!/usr/bin/env bash
# The main job: set up what the proxy needs, run `shardscope proxy` in front of an upstream, drive
# seed 003's order-service workload through it, and show what shardscope found: traffic per shard,
# the order-id lookups the rewrite rescued, and the shard-key evaluation's verdict.
# With no --upstream, an embedded FerretDB is started (port 37017: clear of MongoDB's 27017-27020).
#
#   bash scripts/demo.sh                 # embedded FerretDB upstream; Ctrl-C stops it
#   bash scripts/demo.sh --exit          # print the findings and stop
#   bash scripts/demo.sh --upstream mongodb://mongos.example:27017/
#   options: --listen HOST:PORT (127.0.0.1:27016)  --admin HOST:PORT (127.0.0.1:9901)
#            --routing FILE (examples/routing/demo_orders_6shards.json)  --ops N (400)  --orders N (2000)  --ferret-port N (37017)
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cache="${SHARDSCOPE_CACHE:-$HOME/.cache/shardscope}"
# 2,000 orders and 400 operations show every finding (tests/integration/test_demo_findings.py checks
# them at these sizes) in about a minute: the embedded FerretDB's SQLite backend answers only _id
# lookups from an index and scans the collection for every other query, whatever indexes exist.
upstream="" listen="127.0.0.1:27016" admin="127.0.0.1:9901" ops=400 orders=2000 exit_after=0 ferret_port=37017
routing="$here/examples/routing/demo_orders_6shards.json"  # chunks cut to fit the workload's customers
while (($#)); do
  case "$1" in
    --upstream) upstream="$2"; shift 2 ;;
    --listen) listen="$2"; shift 2 ;;
    --admin) admin="$2"; shift 2 ;;
    --routing) routing="$2"; shift 2 ;;
    --ops) ops="$2"; shift 2 ;;
    --orders) orders="$2"; shift 2 ;;
    --ferret-port) ferret_port="$2"; shift 2 ;;
    --exit) exit_after=1; shift ;;
    -h|--help) sed -n '2,11p' "$0"; exit 0 ;;
    *) echo "demo: unknown option $1" >&2; exit 2 ;;
  esac
done
log() { printf '[demo] %s\n' "$*" >&2; }

# Where the time goes, printed at the end: setup.sh and install_test_deps.sh add their own stages.
# (Not a SHARDSCOPE_ name: the proxy reads those from its environment as configuration.)
work="$here/build/demo"
mkdir -p "$work"
export DEMO_STAGE_TIMES="$work/stages.tsv"
: >"$DEMO_STAGE_TIMES"
demo_start=$SECONDS
stage_time() { printf '%s\t%s\n' "$1" "$((SECONDS - $2))" >>"$DEMO_STAGE_TIMES"; }
# The table ends with the CPU seconds (user + system) of the commands this script waited for (`times`,
# run in this shell: a $(...) would count the subshell's children): with the wall time it says whether
# a slow stage worked or waited (for the network, or for a machine busy with other work).
print_stage_times() {
  echo
  echo "== where the time went (wall seconds; the setup's background stages overlap the C++ build)"
  while IFS=$'\t' read -r name secs; do printf '  %-66s %5s\n' "$name" "$secs"; done <"$DEMO_STAGE_TIMES"
  printf '  %-66s %5s\n' "total, start to findings" "$((SECONDS - demo_start))"
  local cpu
  times >"$work/times.txt"
  cpu=$(awk 'NR == 2 { n = 0; for (i = 1; i <= 2; i++) { split($i, t, "m"); n += t[1] * 60 + t[2] } printf "%d", n }' "$work/times.txt")
  echo "  CPU of the steps above, servers excluded: $cpu s on $(nproc) cores; load average now:" \
    "$(cut -d' ' -f1-3 /proc/loadavg) (other work on the machine makes every stage slower)"
}

# Compiler, libraries, FerretDB and pymongo; the test toolchain stays with scripts/test.sh.
t0=$SECONDS
bash "$here/scripts/setup.sh" --demo
stage_time "setup (scripts/setup.sh --demo), all of it" "$t0"
pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; wait 2>/dev/null || true; }
trap cleanup EXIT INT TERM

wait_port() {  # host port seconds
  for _ in $(seq 1 $(($3 * 10))); do
    (exec 3<>"/dev/tcp/$1/$2") 2>/dev/null && return 0
    sleep 0.1
  done
  return 1
}

if [[ -z "$upstream" ]]; then
  # Someone else's server on the port would answer in place of ours.
  if (exec 3<>"/dev/tcp/127.0.0.1/$ferret_port") 2>/dev/null; then
    log "port $ferret_port is already in use; choose another with --ferret-port N"
    exit 1
  fi
  t0=$SECONDS
  rm -rf "$work/ferretdb" && mkdir -p "$work/ferretdb"
  log "starting embedded FerretDB on 127.0.0.1:$ferret_port (SQLite in $work/ferretdb)"
  "$cache/bin/ferretdb" --handler=sqlite --sqlite-url="file:$work/ferretdb/" --listen-addr="127.0.0.1:$ferret_port" \
    --debug-addr=- --telemetry=disable --state-dir="$work" --log-level=warn >"$work/ferretdb.log" 2>&1 &
  pids+=($!)
  wait_port 127.0.0.1 "$ferret_port" 20 || { log "FerretDB did not start; see $work/ferretdb.log"; exit 1; }
  upstream="mongodb://127.0.0.1:$ferret_port/"
  stage_time "FerretDB start" "$t0"
fi

# The lookup rewrite: a filter on orderId gains the customerId it maps to (learned from the traffic),
# so mongos can send it to one shard instead of all six; a findOne by orderId too, one document per
# order id being assumed until the traffic shows otherwise (docs/rewrite.md).
rule="shop.orders: orderId -> customerId"
t0=$SECONDS
log "starting shardscope proxy on $listen -> $upstream (admin on $admin)"
"$here/build/shardscope" proxy --listen "$listen" --upstream "$upstream" --admin "$admin" --routing "$routing" \
  --rewrite-rule "$rule" --evaluation.simulated_shards 6 \
  --evaluation.candidates 'shop.orders: {"customerId": 1, "orderDate": 1};shop.orders: {"orderId": "hashed"}' \
  2> >(tee "$work/shardscope.log" >&2) &
pids+=($!)
wait_port "${listen%:*}" "${listen##*:}" 20 || { log "proxy did not start; see $work/shardscope.log"; exit 1; }
stage_time "proxy start" "$t0"

log "driving the order-service workload ($orders orders of 300 customers, then $ops operations) through the proxy"
# --indexes: the indexes the application would have, created through the proxy before the workload.
t0=$SECONDS
python3 "$here/workload/order_service.py" --uri "mongodb://$listen/" --drop --indexes --ops "$ops" --orders "$orders" --customers 300 \
  >"$work/workload.json"
stage_time "workload ($ops operations, $orders orders)" "$t0"
log "workload: $(cat "$work/workload.json")"
t0=$SECONDS

echo
echo "== what shardscope saw: traffic per shard, and the order-id lookups the rewrite rescued"
curl -sf "http://$admin/stats" | python3 "$here/workload/demo_summary.py"
echo
echo "== the live view (shardscope stats --once)"
"$here/build/shardscope" stats --admin "http://$admin" --once --top 8 || true
echo
echo "== the shard-key evaluation's verdict (shardscope evaluate, from the value-free export)"
"$here/build/shardscope" evaluate --from "http://$admin" >"$work/evaluate.txt" || true
cat "$work/evaluate.txt"
# One report, one renderer: the CLI's verdict from the export is the proxy's own /evaluate.
if curl -sf "http://$admin/evaluate?format=text" | cmp -s - "$work/evaluate.txt"; then
  log "the verdict above is identical to http://$admin/evaluate?format=text"
else
  log "the CLI's verdict differs from http://$admin/evaluate?format=text (traffic arrived in between?)"
fi
stage_time "findings: summary, stats --once, evaluate" "$t0"
print_stage_times

if ((exit_after)); then
  log "done (--exit): stopping the proxy and FerretDB"
  exit 0
fi
cat <<MSG

  shardscope is running.
    dashboard:   http://$admin/
    JSON stats:  curl -s http://$admin/stats
    metrics:     curl -s http://$admin/metrics   (Grafana + alerts: packaging/monitoring/)
    terminal:    $here/build/shardscope stats --admin http://$admin --watch 2
    explain:     $here/build/shardscope explain --routing $routing --command '{"find": "orders", "filter": {"orderId": "O0000042"}, "\$db": "shop"}'
    your app:    point its driver at mongodb://$listen/

MSG
log "press Ctrl-C to stop"
wait "${pids[-1]}"
