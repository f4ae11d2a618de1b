#!/usr/bin/env bash
# The main job: set up this machine, then run `shardscope proxy` in front of an upstream and drive
# seed 003's order-service workload through it. With no --upstream, an embedded FerretDB is started.
#
#   bash scripts/demo.sh                         # embedded FerretDB upstream
#   bash scripts/demo.sh --upstream mongodb://mongos.example:27017/
#   options: --listen HOST:PORT (127.0.0.1:27016)  --admin HOST:PORT (127.0.0.1:9901)
#            --routing FILE (examples/routing/orders_6shards.json)  --ops N (600)  --exit (stop after the workload)
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cache="${SHARDSCOPE_CACHE:-$HOME/.cache/shardscope}"
upstream="" listen="127.0.0.1:27016" admin="127.0.0.1:9901" ops=600 exit_after=0
routing="$here/examples/routing/orders_6shards.json"
while (($#)); do
  case "$1" in
    --upstream) upstream="$2"; shift 2 ;;
    --listen) listen="$2"; shift 2 ;;
    --admin) admin="$2"; shift 2 ;;
    --routing) routing="$2"; shift 2 ;;
    --ops) ops="$2"; shift 2 ;;
    --exit) exit_after=1; shift ;;
    -h|--help) sed -n '2,9p' "$0"; exit 0 ;;
    *) echo "demo: unknown option $1" >&2; exit 2 ;;
  esac
done
log() { printf '[demo] %s\n' "$*" >&2; }

bash "$here/scripts/setup.sh"

work="$here/build/demo"
mkdir -p "$work"
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
  ferret_port=27018
  rm -rf "$work/ferretdb" && mkdir -p "$work/ferretdb"
  log "starting embedded FerretDB on 127.0.0.1:$ferret_port (SQLite in $work/ferretdb)"
  "$cache/bin/ferretdb" --handler=sqlite --sqlite-url="file:$work/ferretdb/" --listen-addr="127.0.0.1:$ferret_port" \
    --debug-addr=- --telemetry=disable --log-level=warn >"$work/ferretdb.log" 2>&1 &
  pids+=($!)
  wait_port 127.0.0.1 "$ferret_port" 20 || { log "FerretDB did not start; see $work/ferretdb.log"; exit 1; }
  upstream="mongodb://127.0.0.1:$ferret_port/"
fi

log "starting shardscope proxy on $listen -> $upstream (admin on $admin)"
"$here/build/shardscope" proxy --listen "$listen" --upstream "$upstream" --admin "$admin" --routing "$routing" \
  2> >(tee "$work/shardscope.log" >&2) &
pids+=($!)
wait_port "${listen%:*}" "${listen##*:}" 20 || { log "proxy did not start; see $work/shardscope.log"; exit 1; }

log "driving the order-service workload ($ops operations) through the proxy"
python3 "$here/workload/order_service.py" --uri "mongodb://$listen/" --drop --ops "$ops" --orders 2000 --customers 300 | tee "$work/workload.json"

cat <<MSG

  shardscope is running.
    dashboard:   http://$admin/
    JSON stats:  curl -s http://$admin/stats
    metrics:     curl -s http://$admin/metrics
    terminal:    $here/build/shardscope stats --admin http://$admin
    explain:     $here/build/shardscope explain --routing $routing --command '{"find": "orders", "filter": {"orderId": "O0000042"}, "\$db": "shop"}'
    your app:    point its driver at mongodb://$listen/

MSG
if ((exit_after)); then
  "$here/build/shardscope" stats --admin "http://$admin" --once || true
  exit 0
fi
log "press Ctrl-C to stop"
wait "${pids[-1]}"
