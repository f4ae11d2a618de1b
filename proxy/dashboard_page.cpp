// The dashboard served at /: one self-contained page (no external assets) that polls /stats every
// 2 s and shows the top query shapes with their class, fan-out and latency, and per-shard load.
#include "proxy/admin_server.h"

namespace shardscope::proxy {
namespace {

// Data is only ever inserted with textContent (never innerHTML), so a shape cannot inject markup.
constexpr std::string_view kPage = R"shardscope(<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>shardscope - live routing</title>
<link rel="icon" href="data:,">
<style>
:root { --bg:#0f1419; --panel:#171e26; --line:#263240; --text:#d7dee6; --dim:#8394a6; --accent:#4fb0ff;
  --single:#3fb950; --multi:#d4a72c; --broadcast:#f85149; --unsharded:#8b949e; --no_collection:#6e7681; --unclassified:#a371f7; }
* { box-sizing:border-box; }
body { margin:0; font:14px/1.4 system-ui,-apple-system,"Segoe UI",sans-serif; background:var(--bg); color:var(--text); }
header { display:flex; align-items:baseline; gap:16px; padding:14px 22px; border-bottom:1px solid var(--line); }
header h1 { font-size:18px; margin:0; font-weight:600; }
header .meta { color:var(--dim); font-size:12px; }
#status { margin-left:auto; font-size:12px; color:var(--dim); }
#status.err { color:var(--broadcast); }
main { padding:18px 22px; display:grid; gap:18px; }
.cards { display:grid; grid-template-columns:repeat(6,1fr); gap:12px; }
.card { background:var(--panel); border:1px solid var(--line); border-radius:8px; padding:10px 14px; }
.card .label { color:var(--dim); font-size:11px; text-transform:uppercase; letter-spacing:.05em; }
.card .value { font-size:22px; font-weight:600; font-variant-numeric:tabular-nums; }
section { background:var(--panel); border:1px solid var(--line); border-radius:8px; padding:12px 14px; }
section h2 { font-size:13px; margin:0 0 10px; color:var(--dim); text-transform:uppercase; letter-spacing:.05em; }
.split { display:grid; grid-template-columns:1fr 1fr; gap:18px; }
.stack { display:flex; height:18px; border-radius:4px; overflow:hidden; background:var(--line); }
.stack div { height:100%; }
.legend { display:flex; flex-wrap:wrap; gap:12px; margin-top:8px; font-size:12px; color:var(--dim); }
.legend i { display:inline-block; width:10px; height:10px; border-radius:2px; margin-right:4px; vertical-align:-1px; }
table { width:100%; border-collapse:collapse; font-variant-numeric:tabular-nums; }
th { text-align:left; font-size:11px; color:var(--dim); font-weight:500; text-transform:uppercase; padding:4px 6px;
  border-bottom:1px solid var(--line); white-space:nowrap; }
td { padding:5px 6px; border-bottom:1px solid #1d2631; vertical-align:top; }
td.num, th.num { text-align:right; white-space:nowrap; }
td.shape { font-family:ui-monospace,SFMono-Regular,Menlo,monospace; font-size:12px; word-break:break-all; max-width:520px; }
.badge { display:inline-block; padding:1px 7px; border-radius:10px; font-size:11px; font-weight:600; color:#0f1419; }
.bar { position:relative; height:14px; background:var(--line); border-radius:3px; min-width:120px; }
.bar div { position:absolute; left:0; top:0; bottom:0; background:var(--accent); border-radius:3px; }
.warn { color:var(--multi); font-size:12px; margin-top:8px; }
.empty { color:var(--dim); padding:10px 0; }
#auth { display:none; gap:8px; align-items:center; }
#auth input { background:var(--bg); color:var(--text); border:1px solid var(--line); border-radius:4px; padding:4px 8px; }
</style>
</head>
<body>
<header>
  <h1>shardscope</h1><span class="meta">live routing statistics</span>
  <span class="meta" id="window"></span>
  <form id="auth"><input id="token" type="password" placeholder="admin bearer token"><button>use</button></form>
  <span id="status">loading...</span>
</header>
<main>
  <div class="cards">
    <div class="card"><div class="label">operations</div><div class="value" id="total-ops">-</div></div>
    <div class="card"><div class="label">ops / s</div><div class="value" id="ops-rate">-</div></div>
    <div class="card"><div class="label">targeted</div><div class="value" id="targeted-share">-</div></div>
    <div class="card"><div class="label">broadcast</div><div class="value" id="broadcast-share">-</div></div>
    <div class="card"><div class="label">errors</div><div class="value" id="total-errors">-</div></div>
    <div class="card"><div class="label">connections</div><div class="value" id="connections">-</div></div>
  </div>
  <div class="split">
    <section><h2>Targeting class</h2><div class="stack" id="class-stack"></div><div class="legend" id="class-legend"></div>
      <h2 style="margin-top:14px" title="serverStatus().shardingStatistics.numHostsTargeted">Shards reached, as mongos counts them</h2><div class="legend" id="hosts-legend"></div></section>
    <section><h2>Per-shard load</h2>
      <table><thead><tr><th>shard</th><th class="num">ops</th><th class="num">share</th><th></th></tr></thead>
      <tbody id="shards"></tbody></table></section>
  </div>
  <section><h2>Top query shapes</h2>
    <table><thead><tr><th class="num">#</th><th>namespace</th><th>command</th><th>shape</th><th class="num">count</th>
      <th class="num">share</th><th>class</th><th>hosts</th><th class="num">broadcast</th><th class="num">shards avg / max</th>
      <th class="num">p50</th><th class="num">p99</th><th class="num">max</th><th class="num">errors</th></tr></thead>
    <tbody id="shapes"></tbody></table>
    <div class="warn" id="cap"></div>
  </section>
</main>
<script>
"use strict";
const CLASSES = ["single", "multi", "broadcast", "unsharded", "no_collection", "unclassified"];
const HOSTS = ["oneShard", "manyShards", "allShards", "unsharded"];
const TOP = 25;
let token = "";
let previous = null;

(function initToken() {
  const m = /(?:^|[#&])token=([^&]+)/.exec(location.hash);
  if (m) { token = decodeURIComponent(m[1]); sessionStorage.setItem("shardscope-token", token); history.replaceState(null, "", location.pathname); }
  else token = sessionStorage.getItem("shardscope-token") || "";
  document.getElementById("auth").addEventListener("submit", (e) => {
    e.preventDefault();
    token = document.getElementById("token").value;
    sessionStorage.setItem("shardscope-token", token);
    refresh();
  });
})();

function el(tag, attrs, text) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) e.setAttribute(k, v);
  if (text !== undefined) e.textContent = text;
  return e;
}
function fmtInt(n) { return Number(n).toLocaleString("en-US"); }
function fmtPct(x) { return (100 * x).toFixed(x > 0 && x < 0.001 ? 2 : 1) + "%"; }
function fmtNs(ns) {
  if (!ns) return "-";
  if (ns < 1e3) return ns + " ns";
  if (ns < 1e6) return (ns / 1e3).toFixed(ns < 1e4 ? 1 : 0) + " \u00b5s";
  if (ns < 1e9) return (ns / 1e6).toFixed(ns < 1e7 ? 2 : 1) + " ms";
  return (ns / 1e9).toFixed(2) + " s";
}
function setText(id, text) { document.getElementById(id).textContent = text; }
function badge(cls) {
  const b = el("span", {class: "badge", "data-class": cls}, cls);
  b.style.background = "var(--" + cls + ")";
  return b;
}

function render(s) {
  const t = s.totals;
  const ops = t.ops;
  const routed = t.targeting.single + t.targeting.multi + t.targeting.broadcast;
  setText("total-ops", fmtInt(ops));
  // One definition everywhere, computed by /stats: oneShard / (oneShard + manyShards + allShards).
  const h = t.hostsTargeted;
  setText("targeted-share", h.oneShard + h.manyShards + h.allShards ? fmtPct(t.targetedShare) : "-");
  const hostsLegend = document.getElementById("hosts-legend");
  hostsLegend.replaceChildren();
  for (const c of HOSTS) hostsLegend.append(el("span", {"data-hosts": c, "data-count": String(h[c])}, c + " " + fmtInt(h[c])));
  setText("broadcast-share", routed ? fmtPct(t.targeting.broadcast / routed) : "-");
  setText("total-errors", fmtInt(t.errors));
  setText("connections", fmtInt(s.process.connectionsActive));
  setText("window", "window " + Math.round(s.windowSeconds) + " s \u00b7 up " + Math.round(s.uptimeSeconds) + " s");
  const now = Date.now();
  if (previous && now > previous.at && ops >= previous.ops)
    setText("ops-rate", ((ops - previous.ops) * 1000 / (now - previous.at)).toFixed(1));
  previous = {at: now, ops: ops};

  const stack = document.getElementById("class-stack");
  const legend = document.getElementById("class-legend");
  stack.replaceChildren(); legend.replaceChildren();
  for (const c of CLASSES) {
    const n = t.targeting[c];
    if (!n) continue;
    const seg = el("div", {title: c + ": " + n});
    seg.style.width = (100 * n / ops) + "%";
    seg.style.background = "var(--" + c + ")";
    stack.append(seg);
    const item = el("span", {"data-class": c, "data-count": String(n)});
    const sw = el("i"); sw.style.background = "var(--" + c + ")";
    item.append(sw, c + " " + fmtInt(n) + " (" + fmtPct(n / ops) + ")");
    legend.append(item);
  }

  const shards = document.getElementById("shards");
  shards.replaceChildren();
  const maxShard = Math.max(1, ...s.shards.map((x) => x.ops));
  for (const sh of s.shards) {
    const tr = el("tr", {class: "shard", "data-shard": sh.name, "data-ops": String(sh.ops)});
    const bar = el("div", {class: "bar"}); const fill = el("div"); fill.style.width = (100 * sh.ops / maxShard) + "%"; bar.append(fill);
    const barCell = el("td"); barCell.append(bar);
    tr.append(el("td", {}, sh.name), el("td", {class: "num", "data-field": "ops"}, fmtInt(sh.ops)),
              el("td", {class: "num"}, fmtPct(sh.share)), barCell);
    shards.append(tr);
  }
  if (!s.shards.length) {
    const tr = el("tr"); tr.append(el("td", {class: "empty", colspan: "4"}, "no shard touched yet")); shards.append(tr);
  }

  const body = document.getElementById("shapes");
  body.replaceChildren();
  let rank = 0;
  for (const sh of s.shapes.slice(0, TOP)) {
    rank++;
    const tr = el("tr", {class: "shape", "data-shape-id": sh.id, "data-count": String(sh.count), "data-class": sh["class"],
                         "data-command": sh.command, "data-ns": sh.ns});
    const classCell = el("td"); classCell.append(badge(sh["class"]));
    tr.append(el("td", {class: "num"}, String(rank)), el("td", {}, sh.ns), el("td", {}, sh.command),
              el("td", {class: "shape", title: sh.shape}, sh.shape),
              el("td", {class: "num", "data-field": "count"}, fmtInt(sh.count)),
              el("td", {class: "num"}, ops ? fmtPct(sh.count / ops) : "-"), classCell,
              el("td", {"data-field": "hosts"}, sh.countClass),
              el("td", {class: "num", "data-field": "broadcast"}, fmtPct(sh.broadcastShare)),
              el("td", {class: "num", "data-field": "shards"}, sh.shardsTouched.mean.toFixed(1) + " / " + sh.shardsTouched.max),
              el("td", {class: "num", "data-field": "p50"}, fmtNs(sh.latency.p50Ns)),
              el("td", {class: "num", "data-field": "p99"}, fmtNs(sh.latency.p99Ns)),
              el("td", {class: "num"}, fmtNs(sh.latency.maxNs)),
              el("td", {class: "num", "data-field": "errors"}, fmtInt(sh.errors.total)));
    body.append(tr);
  }
  if (!rank) {
    const tr = el("tr"); tr.append(el("td", {class: "empty", colspan: "14"}, "no operations yet")); body.append(tr);
  }
  const cap = s.shapeCap.namespacesAtCap;
  setText("cap", cap.length ? "shape cap (" + s.shapeCap.maxShapesPerNamespace + " per namespace) reached in " +
          cap.join(", ") + ": " + fmtInt(s.shapeCap.opsInOther) + " operations counted as <other>" : "");
}

async function refresh() {
  const status = document.getElementById("status");
  try {
    const r = await fetch("stats", {headers: token ? {Authorization: "Bearer " + token} : {}, cache: "no-store"});
    if (r.status === 401) {
      document.getElementById("auth").style.display = "flex";
      status.className = "err"; status.textContent = "token required";
      return;
    }
    if (!r.ok) throw new Error("HTTP " + r.status);
    render(await r.json());
    document.getElementById("auth").style.display = "none";
    status.className = ""; status.textContent = "updated " + new Date().toLocaleTimeString();
    document.body.setAttribute("data-loaded", "true");
  } catch (e) {
    status.className = "err"; status.textContent = "refresh failed: " + e.message;
  }
}
function loop() { refresh().finally(() => setTimeout(loop, 2000)); }
loop();
</script>
</body>
</html>
)shardscope";

}  // namespace

std::string_view dashboardPage() { return kPage; }

}  // namespace shardscope::proxy
