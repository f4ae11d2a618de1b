// The dashboard served at /: one self-contained page (no external assets) that answers "why".
// Every 2 s it reads /stats (health, shapes, reasons, rewrites, hotness), /history (ops/s per class
// and per shard over the last minutes, sampled by the server so a page opened late still has them),
// /chunks (shard key and chunks per namespace) and /evaluate (the shard-key verdict, when evaluation
// is on). The page computes no figure of its own: every share, rate and ratio comes from the server
// (stats/, admin/traffic_history.cpp), so the page, `shardscope stats` and /metrics agree, and every
// figure says what it is a share of and over which interval.
#include "admin/admin_server.h"

#include <fmt/format.h>

#include "common/hidden_characters.h"

namespace shardscope::admin {
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
main { padding:18px 22px; display:grid; grid-template-columns:minmax(0,1fr); gap:18px; }
.cards { display:grid; grid-template-columns:repeat(8,minmax(0,1fr)); gap:10px; }
.card { background:var(--panel); border:1px solid var(--line); border-radius:8px; padding:10px 14px; }
.card .label { color:var(--dim); font-size:11px; text-transform:uppercase; letter-spacing:.05em; }
.card .value { font-size:22px; font-weight:600; font-variant-numeric:tabular-nums; }
.card .sub { color:var(--dim); font-size:11px; }
.card.hot { border-color:var(--broadcast); }
.card.health-up, .card.health-ok { border-color:var(--single); }
.card.health-up .value, .card.health-ok .value { color:var(--single); }
.card.health-degraded, .card.health-starting { border-color:var(--multi); }
.card.health-degraded .value, .card.health-starting .value { color:var(--multi); }
.card.health-down { border-color:var(--broadcast); background:#3a1417; }
.card.health-down .value { color:var(--broadcast); }
.card.health-stale { border-color:var(--broadcast); }
.card.health-stale .value { color:var(--dim); }
#banner { display:none; padding:12px 22px; font-size:16px; font-weight:700; color:#fff; }
#banner[data-state="down"] { display:block; background:#b62324; }
#banner[data-state="degraded"] { display:block; background:#7d5a00; }
#banner[data-state="stale"] { display:block; background:#5a2d82; }
#banner .detail { display:block; font-size:12px; font-weight:400; margin-top:2px; }
body[data-health="down"] main { outline:4px solid #b62324; outline-offset:-4px; }
body[data-health="stale"] main { opacity:.55; }
.note { color:var(--dim); font-size:11px; margin:2px 0 8px; }
.est { color:var(--multi); }
.card.hot .value { color:var(--broadcast); }
section { background:var(--panel); border:1px solid var(--line); border-radius:8px; padding:12px 14px; }
section h2 { font-size:13px; margin:0 0 10px; color:var(--dim); text-transform:uppercase; letter-spacing:.05em; }
.split { display:grid; grid-template-columns:minmax(0,1fr) minmax(0,1fr); gap:18px; }
.stack { display:flex; height:18px; border-radius:4px; overflow:hidden; background:var(--line); }
.stack div { height:100%; }
.legend { display:flex; flex-wrap:wrap; gap:12px; margin-top:8px; font-size:12px; color:var(--dim); }
.legend i { display:inline-block; width:10px; height:10px; border-radius:2px; margin-right:4px; vertical-align:-1px; }
svg.chart { width:100%; height:150px; display:block; }
svg.chart text { fill:var(--dim); font-size:10px; }
svg.chart .grid { stroke:var(--line); stroke-width:1; }
table { width:100%; border-collapse:collapse; font-variant-numeric:tabular-nums; }
th { text-align:left; font-size:11px; color:var(--dim); font-weight:500; text-transform:uppercase; padding:4px 4px;
  border-bottom:1px solid var(--line); white-space:nowrap; }
td { padding:5px 4px; border-bottom:1px solid #1d2631; vertical-align:top; }
td .cmd { color:var(--dim); font-size:12px; }
td.num, th.num { text-align:right; white-space:nowrap; }
td.shape, td.mono { font-family:ui-monospace,SFMono-Regular,Menlo,monospace; font-size:12px; word-break:break-all; }
/* A shape is one line, cut with an ellipsis; "more" shows it whole (Query Insights does the same). */
td.shape { max-width:260px; min-width:180px; }
td.shape .text { white-space:nowrap; overflow:hidden; text-overflow:ellipsis; }
td.shape.expanded .text { white-space:pre-wrap; }
td.shape button { background:none; border:0; color:var(--accent); cursor:pointer; font-size:11px; padding:0; }
.ranges-box { max-height:320px; overflow:auto; }
td.why { color:var(--dim); font-size:12px; min-width:150px; max-width:220px; }
td.defence { color:var(--dim); font-size:12px; max-width:520px; }
.badge { display:inline-block; padding:1px 7px; border-radius:10px; font-size:11px; font-weight:600; color:#0f1419; white-space:nowrap; }
.rewrite { display:inline-block; margin-top:3px; font-size:11px; color:var(--single); max-width:150px; }
.hotflag { color:var(--broadcast); font-weight:600; font-size:11px; }
.bar { position:relative; height:14px; background:var(--line); border-radius:3px; min-width:90px; }
.bar div { position:absolute; left:0; top:0; bottom:0; background:var(--accent); border-radius:3px; }
.bar.chunks div { background:var(--dim); }
.warn { color:var(--multi); font-size:12px; margin-top:8px; }
.empty { color:var(--dim); padding:10px 0; }
.nsblock { margin-bottom:12px; }
.nsblock h3 { font-size:13px; margin:6px 0; font-weight:600; }
.nsblock h3 span { color:var(--dim); font-weight:400; font-family:ui-monospace,monospace; font-size:12px; }
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
<div id="banner" data-state="unknown"><span id="banner-text"></span><span class="detail" id="banner-detail"></span></div>
<main>
  <div class="cards">
    <div class="card" id="health-card"><div class="label">upstream</div><div class="value" id="health-value">-</div><div class="sub" id="health-sub"></div></div>
    <div class="card"><div class="label">operations</div><div class="value" id="total-ops">-</div><div class="sub" id="total-ops-sub">since reset</div></div>
    <div class="card"><div class="label">ops / s</div><div class="value" id="ops-rate">-</div><div class="sub" id="ops-rate-sub"></div></div>
    <div class="card"><div class="label" title="oneShard / (oneShard + manyShards + allShards), as mongos counts numHostsTargeted">targeted</div><div class="value" id="targeted-share">-</div><div class="sub" id="targeted-sub"></div></div>
    <div class="card"><div class="label" title="allShards / (oneShard + manyShards + allShards): operations that reached every shard owning chunks, as mongos counts numHostsTargeted">broadcast (all shards)</div><div class="value" id="broadcast-share">-</div><div class="sub" id="broadcast-sub"></div></div>
    <div class="card" id="hot-card"><div class="label" title="per namespace: busiest / least busy chunk-owning shard, counting operations the shard key sent to one shard (oneShard)">hot shard</div><div class="value" id="hot-ratio">-</div><div class="sub" id="hot-sub"></div></div>
    <div class="card" id="errors-card"><div class="label">errors</div><div class="value" id="total-errors">-</div><div class="sub" id="errors-sub"></div></div>
    <div class="card"><div class="label">connections</div><div class="value" id="connections">-</div><div class="sub">open now</div></div>
  </div>
  <div class="split">
    <section><h2>Operations / s by targeting class <span id="history-span"></span></h2><svg class="chart" id="chart-class"></svg><div class="legend" id="chart-class-legend"></div></section>
    <section><h2>Operations / s per shard <span id="history-span-shard"></span></h2><svg class="chart" id="chart-shard"></svg><div class="legend" id="chart-shard-legend"></div></section>
  </div>
  <div class="split">
    <section><h2>Targeting class: why (since reset)</h2><div class="note" id="class-note"></div><div class="stack" id="class-stack"></div><div class="legend" id="class-legend"></div>
      <h2 style="margin-top:14px" title="serverStatus().shardingStatistics.numHostsTargeted">Shards reached, as mongos counts them (since reset)</h2><div class="note" id="hosts-note"></div><div class="legend" id="hosts-legend"></div></section>
    <section><h2>Per-shard load (all namespaces)</h2>
      <div class="note">ops and share: since reset (a broadcast counts once on every shard it reached); ops/s: <span id="rate-spans"></span></div>
      <table><thead><tr><th>shard</th><th class="num">ops</th><th class="num">share</th><th class="num" id="th-rate-last">ops/s last</th><th class="num" id="th-rate-window">ops/s avg</th><th></th></tr></thead>
      <tbody id="shards"></tbody></table></section>
  </div>
  <section><h2>Shard key per namespace and the evaluation's recommendation</h2>
    <div class="note" id="routing-load"></div>
    <table><thead><tr><th>namespace</th><th>current shard key</th><th class="num">chunks</th><th>recommended key</th><th>why</th></tr></thead>
    <tbody id="keys"></tbody></table></section>
  <section><h2>Top query shapes: what they do and why (since reset)</h2>
    <div class="note">share: of all operations; class: shardscope's reason (why); reached: what mongos counts (numHostsTargeted); all shards: of the shape's operations on sharded collections, those that reached every chunk-owning shard</div>
    <table><thead><tr><th class="num">#</th><th>namespace, command</th><th>shape</th><th class="num">count</th>
      <th class="num" title="of all operations since reset">share</th><th title="shardscope's reason-based class">class</th><th>why</th><th title="numHostsTargeted class most operations got">reached</th><th class="num" title="allShards / operations on sharded collections">all shards</th><th class="num">shards avg / max</th>
      <th class="num">p50</th><th class="num" title="the tooltip of each cell gives the max">p99</th><th class="num">errors</th></tr></thead>
    <tbody id="shapes"></tbody></table>
    <div class="warn" id="cap"></div>
  </section>
  <section><h2>Chunks per namespace (as sh.status() shows them)</h2>
    <div class="note">per shard: this namespace's operations since reset, counted exactly (writes included); per chunk range: <span class="est">&#8776; estimates</span> from the evaluation's samples</div><div id="chunks"></div></section>
</main>
<script>
"use strict";
const CLASSES = ["single", "multi", "broadcast", "unsharded", "no_collection", "unclassified"];
const HOSTS = ["oneShard", "manyShards", "allShards", "unsharded"];
const SHARD_COLORS = ["#4fb0ff", "#3fb950", "#d4a72c", "#f85149", "#a371f7", "#ff7b72", "#79c0ff", "#56d364", "#e3b341", "#db61a2"];
const TOP = 25;
const SHAPE_CHARS = 48;  // a longer shape gets a "more" link
let token = "";
const expanded = new Set();  // shape ids shown whole: kept across refreshes

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

// Text as the CLI shows it (common::printableText): newlines kept, other control characters and
// the characters that alter how text around them shows (bidi overrides, zero-width characters:
// common/hidden_characters.h, the list the server writes in here) as escapes, so a name a client
// chose reads as the bytes it holds. Every text and title the page writes goes through it.
const HIDDEN = /[\u{0}-\u{9}\u{b}-\u{1f}\u{7f}HIDDEN_CHARACTER_RANGES]/gu;
function shown(text) {
  return String(text).replace(HIDDEN, (c) => {
    const cp = c.codePointAt(0);
    if (c === "\r") return "\\r";
    if (c === "\t") return "\\t";
    if (cp < 0x80) return "\\x" + cp.toString(16).padStart(2, "0");
    return cp > 0xffff ? "\\U" + cp.toString(16).padStart(8, "0") : "\\u" + cp.toString(16).padStart(4, "0");
  });
}
function el(tag, attrs, text) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) e.setAttribute(k, k === "title" ? shown(v) : v);
  if (text !== undefined) e.textContent = shown(text);
  return e;
}
function svgEl(tag, attrs) {
  const e = document.createElementNS("http://www.w3.org/2000/svg", tag);
  for (const [k, v] of Object.entries(attrs || {})) e.setAttribute(k, v);
  return e;
}
function fmtInt(n) { return Number(n).toLocaleString("en-US"); }
// x to d decimals as the CLI's printf writes it: toFixed rounds an exact tie (12.25 to 1 decimal)
// up, printf to the even digit, so the page and `shardscope stats` printed different digits for one
// figure. A tie is exactly when x * 2^(d+1) is an odd integer (x = m / 2^(d+1), m odd).
function fixed(x, d) {
  const m = Math.abs(x) * 2 ** (d + 1);
  if (!Number.isInteger(m) || m % 2 !== 1 || m * 5 ** d > Number.MAX_SAFE_INTEGER) return x.toFixed(d);
  let n = (m * 5 ** d - 1) / 2;  // the lower candidate, in units of 10^-d
  if (n % 2 === 1) n += 1;
  return (Math.sign(x) * n / 10 ** d).toFixed(d);
}
// A share as every surface prints it (cli/stats_command.cpp fmtPct): two decimals below 0.1% so a
// rare class is not shown as 0.0%; no number (null, NaN): "-", never "0.0%".
function fmtPct(x) {
  if (typeof x !== "number" || !isFinite(x)) return "-";
  return fixed(100 * x, x > 0 && x < 0.001 ? 2 : 1) + "%";
}
function fmtRate(x) { return x >= 100 ? fixed(x, 0) : fixed(x, 1); }
// A latency with the digits `shardscope stats` prints (cli/stats_command.cpp fmtNs).
function fmtNs(ns) {
  if (!ns) return "-";
  if (ns < 1e3) return fixed(ns, 0) + " ns";
  if (ns < 1e6) return fixed(ns / 1e3, ns < 1e4 ? 1 : 0) + " \u00b5s";
  if (ns < 1e9) return fixed(ns / 1e6, ns < 1e7 ? 2 : 1) + " ms";
  return fixed(ns / 1e9, 2) + " s";
}
function setText(id, text) { document.getElementById(id).textContent = shown(text); }
function badge(cls) {
  const b = el("span", {class: "badge", "data-class": cls}, cls);
  b.style.background = "var(--" + cls + ")";
  return b;
}
function swatch(item, color) { const sw = el("i"); sw.style.background = color; item.prepend(sw); return item; }
// The class holding most of a count object's operations; ties go to the later (costlier) class, as /stats does.
function dominant(counts) {
  let best = null, n = 0;
  for (const c of CLASSES) if (counts[c] > 0 && counts[c] >= n) { best = c; n = counts[c]; }
  return best;
}
async function getJson(path) {
  const r = await fetch(path, {headers: token ? {Authorization: "Bearer " + token} : {}, cache: "no-store"});
  if (r.status === 401) { const e = new Error("token required"); e.auth = true; throw e; }
  if (r.status === 404) return null;  // a feature that is off (evaluation)
  if (!r.ok) throw new Error(path + ": HTTP " + r.status);
  return r.json();
}

// The only place that reads /evaluate: ns -> {key, text} of each namespace's verdict (key null: no recommendation yet).
function evaluationVerdicts(doc) {
  const out = {};
  for (const n of (doc && doc.namespaces) || [])
    if (n && n.ns && n.verdict) out[n.ns] = {key: n.verdict.key === null ? null : JSON.stringify(n.verdict.key), text: String(n.verdict.text || "").trim()};
  return out;
}

// The defence in one line: its first paragraph without the "Choice: <key>." the key column already
// shows, cut at a word near 260 characters (the whole text is the cell's tooltip).
function oneLine(text) {
  let t = text.split("\n")[0].replace(/^Choice: .*?\. (?=[A-Z])/, "");
  if (t.length > 260) t = t.slice(0, t.lastIndexOf(" ", 260)) + " \u2026";
  return t;
}

// A line chart: series [{name, color, values}] over `times` (unix ms); y from 0 to the largest value.
function lineChart(svg, legend, series, times, spanText) {
  svg.replaceChildren(); legend.replaceChildren();
  const W = svg.clientWidth || 600, H = svg.clientHeight || 150, L = 40, B = 16, T = 6;
  svg.setAttribute("viewBox", "0 0 " + W + " " + H);
  svg.setAttribute("data-points", String(times.length));
  if (times.length < 1) {
    const t = svgEl("text", {x: L, y: H / 2}); t.textContent = "collecting: one point every interval"; svg.append(t); return;
  }
  let max = 0;
  for (const s of series) for (const v of s.values) max = Math.max(max, v);
  max = max > 0 ? max * 1.1 : 1;
  const t0 = times[0], t1 = times[times.length - 1], span = Math.max(1, t1 - t0);
  const x = (t) => times.length === 1 ? W - 4 : L + (W - L - 4) * (t - t0) / span;
  const y = (v) => T + (H - T - B) * (1 - v / max);
  for (const f of [0, 0.5, 1]) {
    svg.append(svgEl("line", {class: "grid", x1: L, x2: W - 4, y1: y(max * f), y2: y(max * f)}));
    const lab = svgEl("text", {x: 2, y: y(max * f) + 3}); lab.textContent = fmtRate(max * f); svg.append(lab);
  }
  const left = svgEl("text", {x: L, y: H - 3}); left.textContent = "-" + Math.round((t1 - t0) / 1000) + " s"; svg.append(left);
  const right = svgEl("text", {x: W - 30, y: H - 3}); right.textContent = "now"; svg.append(right);
  for (const s of series) {
    if (!s.values.some((v) => v > 0)) continue;
    const pts = s.values.map((v, i) => x(times[i]).toFixed(1) + "," + y(v).toFixed(1)).join(" ");
    svg.append(svgEl(times.length === 1 ? "circle" : "polyline",
                     times.length === 1 ? {cx: x(t1), cy: y(s.values[0]), r: 3, fill: s.color, "data-series": s.name}
                                        : {points: pts, fill: "none", stroke: s.color, "stroke-width": 2, "data-series": s.name}));
    const last = s.values[s.values.length - 1];
    legend.append(swatch(el("span", {"data-series": s.name, "data-last-rate": last.toFixed(2)}, s.name + " " + fmtRate(last) + "/s"), s.color));
  }
  if (spanText !== undefined) setText("history-span", spanText);
}

// "last 5 s", "last 10 min": the span a rate covers, in words.
function spanText(seconds) {
  if (seconds < 90) return Math.round(seconds) + " s";
  return (seconds < 5400 ? Math.round(seconds / 60) + " min" : (seconds / 3600).toFixed(1) + " h");
}

function renderHistory(hist) {
  const samples = hist ? hist.samples : [];
  const times = samples.map((s) => s.end);
  const span = samples.length ? "(ops/s per " + hist.intervalSeconds + " s interval, last " + spanText(hist.rates.window.seconds) + ")" : "(collecting)";
  lineChart(document.getElementById("chart-class"), document.getElementById("chart-class-legend"),
            CLASSES.map((c) => ({name: c, color: getComputedStyle(document.body).getPropertyValue("--" + c).trim(),
                                 values: samples.map((s) => s.targeting[c] / s.seconds)})), times, span);
  setText("history-span-shard", span);
  lineChart(document.getElementById("chart-shard"), document.getElementById("chart-shard-legend"),
            (hist ? hist.shards : []).map((name, i) => ({name: name, color: SHARD_COLORS[i % SHARD_COLORS.length],
                                                          values: samples.map((s) => (s.shards[i] || 0) / s.seconds)})), times);
  const card = document.getElementById("ops-rate");
  if (samples.length) {
    const r = hist.rates;
    setText("ops-rate", fmtRate(r.last.ops));
    card.setAttribute("data-rate", r.last.ops.toFixed(3));
    card.setAttribute("data-seconds", String(r.last.seconds));
    setText("ops-rate-sub", "last " + spanText(r.last.seconds) + " \u00b7 avg " + fmtRate(r.window.ops) + "/s over " + spanText(r.window.seconds));
  } else {
    setText("ops-rate", "-"); setText("ops-rate-sub", "collecting (one point per " + (hist ? hist.intervalSeconds : 5) + " s)");
  }
}

// The hot-shard verdict /stats computed (stats/hotness.h): the most imbalanced namespace judged.
function renderHot(hotness) {
  const card = document.getElementById("hot-card");
  card.classList.remove("hot"); card.removeAttribute("data-hot"); card.removeAttribute("data-ratio"); card.removeAttribute("data-ns");
  const judged = (hotness ? hotness.namespaces : []).filter((n) => n.judged);
  if (!judged.length) {
    setText("hot-ratio", "-");
    setText("hot-sub", "too few targeted operations (" + (hotness ? hotness.minTargetedPerShard : 10) + " per chunk-owning shard needed)");
    return null;
  }
  const n = judged[0];
  const ratio = n.ratio === null ? "\u221e" : fixed(n.ratio, 2);
  setText("hot-ratio", ratio + "\u00d7" + (n.hot ? " " + n.hottest : ""));
  setText("hot-sub", (n.hot ? "HOT: " : "balanced: ") + n.ns + " \u00b7 targeted ops since reset \u00b7 threshold " + hotness.threshold);
  card.setAttribute("data-ratio", n.ratio === null ? "inf" : n.ratio.toFixed(3));
  card.setAttribute("data-ns", n.ns);
  if (n.hot) { card.classList.add("hot"); card.setAttribute("data-hot", n.hottest); }
  return n.hot ? n.hottest : null;
}

// Upstream and discovery health (/stats "health"): a coloured tile always, a banner when not ok.
function renderHealth(health) {
  const card = document.getElementById("health-card");
  const banner = document.getElementById("banner");
  const state = health ? health.state : "unknown";
  const up = health ? health.components.find((c) => c.component === "upstream") : null;
  const disc = health ? health.components.find((c) => c.component === "discovery") : null;
  card.className = "card health-" + (up ? up.state : "unknown");
  card.setAttribute("data-state", up ? up.state : "unknown");
  setText("health-value", up ? (up.state === "degraded" ? up.up + " of " + (up.up + up.down + up.notTried) + " UP" : up.state.toUpperCase()) : "-");
  setText("health-sub", (up ? up.up + " mongos up, " + up.down + " down" : "") + (disc ? " \u00b7 discovery " + disc.state : ""));
  card.title = health ? health.components.map((c) => c.component + ": " + c.detail).join("\n") : "";
  document.body.setAttribute("data-health", state);
  banner.setAttribute("data-state", state);
  if (state === "ok" || !health) { setText("banner-text", ""); setText("banner-detail", ""); return; }
  const bad = health.components.filter((c) => !c.healthy || c.state === "degraded");
  setText("banner-text", state === "down" ? "MONGOS DOWN: no upstream reachable, every client operation fails"
                                          : "DEGRADED: " + bad.map((c) => c.component + " " + c.state).join(", "));
  setText("banner-detail", bad.map((c) => c.component + ": " + c.detail).join(" \u00b7 "));
}

function renderShards(s, hist, hotShard) {
  const shards = document.getElementById("shards");
  shards.replaceChildren();
  const last = hist && hist.samples.length ? hist.rates.last : null, win = hist && hist.samples.length ? hist.rates.window : null;
  setText("th-rate-last", last ? "ops/s last " + spanText(last.seconds) : "ops/s last");
  setText("th-rate-window", win ? "ops/s avg " + spanText(win.seconds) : "ops/s avg");
  setText("rate-spans", last ? "the last " + spanText(last.seconds) + " interval, and the average over the last " + spanText(win.seconds) : "collecting");
  const maxShard = Math.max(1, ...s.shards.map((x) => x.ops));
  for (const sh of s.shards) {
    const tr = el("tr", {class: "shard", "data-shard": sh.name, "data-ops": String(sh.ops)});
    const bar = el("div", {class: "bar"}); const fill = el("div"); fill.style.width = (100 * sh.ops / maxShard) + "%"; bar.append(fill);
    const barCell = el("td"); barCell.append(bar);
    const name = el("td", {}, sh.name);
    if (sh.name === hotShard) name.append(" ", el("span", {class: "hotflag", "data-hot": "true"}, "HOT"));
    const rate = (r) => r && sh.name in r.shards ? fmtRate(r.shards[sh.name]) : "-";
    tr.append(name, el("td", {class: "num", "data-field": "ops"}, fmtInt(sh.ops)), el("td", {class: "num"}, fmtPct(sh.share)),
              el("td", {class: "num", "data-field": "rate"}, rate(last)), el("td", {class: "num", "data-field": "rate-window"}, rate(win)), barCell);
    shards.append(tr);
  }
  if (!s.shards.length) {
    const tr = el("tr"); tr.append(el("td", {class: "empty", colspan: "6"}, "no shard touched yet")); shards.append(tr);
  }
}

// Which load of the routing table each panel was computed against (/stats, /chunks and /evaluate
// state it as "routing"; generation 0: none loaded): after a reload a reader sees which table.
function renderRoutingLoad(s, chunks, evaluation) {
  const r = s.routing, box = document.getElementById("routing-load");
  const gen = (doc) => doc && doc.routing ? String(doc.routing.generation) : "";
  box.setAttribute("data-generation", gen(s));
  box.setAttribute("data-chunks-generation", gen(chunks));
  box.setAttribute("data-evaluate-generation", gen(evaluation));
  if (!r || !r.generation) { setText("routing-load", "routing table: none loaded"); return; }
  let text = "routing table in force: load " + r.generation + " (" + r.source + "), published " + r.loadedAt;
  for (const [what, doc] of [["the chunks below", chunks], ["the recommendation", evaluation]])
    if (doc && doc.routing && doc.routing.generation !== r.generation)
      text += " \u00b7 " + what + ": load " + doc.routing.generation;
  setText("routing-load", text);
}

function renderKeys(chunks, verdicts, evaluationOn) {
  const body = document.getElementById("keys");
  body.replaceChildren();
  const nss = new Set([...(chunks ? chunks.namespaces.map((n) => n.ns) : []), ...Object.keys(verdicts)]);
  for (const ns of [...nss].sort()) {
    const c = chunks ? chunks.namespaces.find((n) => n.ns === ns) : null;
    const v = verdicts[ns];
    const tr = el("tr", {class: "key", "data-ns": ns});
    const rec = v ? (v.key || "none yet") : (evaluationOn ? "not observed yet" : "evaluation off");
    const why = el("td", {class: "defence", "data-field": "defence", title: v ? v.text : ""}, v ? oneLine(v.text) : "");
    tr.append(el("td", {}, ns), el("td", {class: "mono", "data-field": "current"}, c ? JSON.stringify(c.key) : "not sharded"),
              el("td", {class: "num"}, c ? fmtInt(c.chunks) : "-"),
              el("td", {class: "mono", "data-field": "recommended"}, rec), why);
    body.append(tr);
  }
  if (!nss.size) { const tr = el("tr"); tr.append(el("td", {class: "empty", colspan: "5"}, "no sharded namespace in the routing table")); body.append(tr); }
}

// One line cut with an ellipsis; "more" shows the whole shape, "less" folds it again.
function shapeCell(sh) {
  const td = el("td", {class: "shape", title: sh.shape, "data-field": "shape"});
  td.append(el("div", {class: "text"}, sh.shape));
  if (sh.shape.length > SHAPE_CHARS) {
    const open = expanded.has(sh.id);
    if (open) td.classList.add("expanded");
    const b = el("button", {type: "button", class: "expand", "aria-expanded": String(open)}, open ? "less" : "more");
    b.addEventListener("click", () => {
      const now = !td.classList.contains("expanded");
      td.classList.toggle("expanded", now);
      b.textContent = now ? "less" : "more";
      b.setAttribute("aria-expanded", String(now));
      if (now) expanded.add(sh.id); else expanded.delete(sh.id);
    });
    td.append(b);
  }
  return td;
}

function renderShapes(s) {
  const body = document.getElementById("shapes");
  body.replaceChildren();
  let rank = 0;
  for (const sh of s.shapes.slice(0, TOP)) {
    rank++;
    const tr = el("tr", {class: "shape", "data-shape-id": sh.id, "data-count": String(sh.count), "data-class": sh["class"],
                         "data-command": sh.command, "data-ns": sh.ns});
    const classCell = el("td"); classCell.append(badge(sh["class"]));
    // A rewritten shape: how the client wrote it -> how it ran, and the share of its operations rescued.
    if (sh.rewrite && sh.rewrite.applied) {
      const before = dominant(sh.rewrite.targetingBefore) || "?";
      const rescued = sh.rewrite.rescued, share = sh.rewrite.rescuedShare;  // /stats's, of the shape's operations
      tr.setAttribute("data-rewrite-before", before);
      tr.setAttribute("data-rewrite-after", sh["class"]);
      tr.setAttribute("data-rescued", share == null ? "" : share.toFixed(4));
      classCell.append(el("br"), el("span", {class: "rewrite", title: fmtInt(rescued) + " of " + fmtInt(sh.count) + " operations rewritten to the shard key; " +
                                              fmtInt(sh.rewrite.fallbacks) + " fell back to the original"},
                              "rewritten: " + before + " \u2192 " + sh["class"] + ", " + fmtPct(share) + " rescued"));
    }
    const where = el("td", {}, sh.ns); where.append(el("br"), el("span", {class: "cmd"}, sh.command));
    tr.append(el("td", {class: "num"}, String(rank)), where,
              shapeCell(sh),
              el("td", {class: "num", "data-field": "count"}, fmtInt(sh.count)),
              el("td", {class: "num", "data-field": "share"}, fmtPct(sh.share)), classCell,
              el("td", {class: "why", "data-field": "reason"}, sh.reason || ""),
              el("td", {"data-field": "hosts"}, sh.countClass),
              el("td", {class: "num", "data-field": "broadcast"}, fmtPct(sh.broadcastShare)),
              el("td", {class: "num", "data-field": "shards"}, fixed(sh.shardsTouched.mean, 1) + " / " + sh.shardsTouched.max),
              el("td", {class: "num", "data-field": "p50"}, fmtNs(sh.latency.p50Ns)),
              el("td", {class: "num", "data-field": "p99", title: "max " + fmtNs(sh.latency.maxNs)}, fmtNs(sh.latency.p99Ns)),
              el("td", {class: "num", "data-field": "errors"}, fmtInt(sh.errors.total)));
    body.append(tr);
  }
  if (!rank) {
    const tr = el("tr"); tr.append(el("td", {class: "empty", colspan: "13"}, "no operations yet")); body.append(tr);
  }
  const cap = s.shapeCap.namespacesAtCap;
  setText("cap", cap.length ? "shape cap (" + s.shapeCap.maxShapesPerNamespace + " per namespace) reached in " +
          cap.join(", ") + ": " + fmtInt(s.shapeCap.opsInOther) + " operations counted as <other>" : "");
}

// The evaluation's traffic per chunk of the current key: estimates from its samples (reads and
// writes whose filter pins the key, inserts scaled from sampled documents), for the ten busiest
// chunks only; by namespace and chunk position.
function chunkTraffic(evaluation) {
  const out = {};
  for (const n of (evaluation && evaluation.namespaces) || []) {
    const hot = n.currentKeyRanges && n.currentKeyRanges.hotRanges;
    if (!hot) continue;
    out[n.ns] = {};
    for (const h of hot) out[n.ns][h.chunk] = h;
  }
  return out;
}

// Per namespace: chunks per shard next to this namespace's exact operations on that shard (from
// /stats, since reset), then every chunk range /chunks lists with the evaluation's estimate.
function renderChunks(chunks, s, hotShard, hotNs, traffic, evaluationOn) {
  const box = document.getElementById("chunks");
  box.replaceChildren();
  if (!chunks || !chunks.namespaces.length) { box.append(el("div", {class: "empty"}, chunks && chunks.loaded ? "no sharded namespace" : "no routing table loaded")); return; }
  for (const n of chunks.namespaces) {
    const block = el("div", {class: "nsblock", "data-ns": n.ns});
    const h = el("h3", {}, n.ns + " "); h.append(el("span", {}, "shard key " + JSON.stringify(n.key) + " \u00b7 " + fmtInt(n.chunks) + " chunks")); block.append(h);
    const loads = {};
    for (const x of (s.namespaces.find((m) => m.ns === n.ns) || {shards: []}).shards) loads[x.name] = x;
    const table = el("table");
    table.append(el("thead")); table.tHead.append(el("tr"));
    for (const [t, c] of [["shard", ""], ["chunks", "num"], ["", ""], ["targeted ops", "num"], ["all ops", "num"], ["writes", "num"]])
      table.tHead.rows[0].append(el("th", c ? {class: c, title: "this namespace, since reset, exact"} : {}, t));
    const tb = el("tbody");
    const maxChunks = Math.max(1, ...Object.values(n.chunksPerShard));
    for (const shard of chunks.shards) {
      const k = n.chunksPerShard[shard] || 0;
      const l = loads[shard] || {ops: 0, targetedOps: 0, writes: 0};
      if (!k && !l.ops) continue;
      const tr = el("tr", {class: "chunkshard", "data-ns": n.ns, "data-shard": shard, "data-chunks": String(k),
                           "data-ops": String(l.ops), "data-targeted": String(l.targetedOps), "data-writes": String(l.writes)});
      const bar = el("div", {class: "bar chunks"}); const fill = el("div"); fill.style.width = (100 * k / maxChunks) + "%"; bar.append(fill);
      const barCell = el("td"); barCell.append(bar);
      const name = el("td", {}, shard);
      if (shard === hotShard && n.ns === hotNs) name.append(" ", el("span", {class: "hotflag"}, "HOT"));
      tr.append(name, el("td", {class: "num"}, fmtInt(k) + " (" + fmtPct(n.chunks ? k / n.chunks : 0) + ")"), barCell,
                el("td", {class: "num"}, fmtInt(l.targetedOps)), el("td", {class: "num"}, fmtInt(l.ops)), el("td", {class: "num"}, fmtInt(l.writes)));
      tb.append(tr);
    }
    table.append(tb); block.append(table);
    const perChunk = traffic[n.ns] || {};
    const estimated = Object.keys(perChunk).length;
    const listed = n.ranges.length;
    const note = el("div", {class: "note", "data-field": "ranges-note"},
                    "chunk ranges: " + fmtInt(listed) + " of " + fmtInt(n.chunks) + " listed" +
                    (n.rangesOmitted ? " (" + fmtInt(n.rangesOmitted) + " more not listed)" : "") + "; traffic per range: " +
                    (evaluationOn ? "\u2248 estimated for the " + estimated + " busiest ranges from the evaluation's samples, not counted"
                                  : "evaluation off, no per-range estimate"));
    block.append(note);
    const box2 = el("div", {class: "ranges-box"});
    const ranges = el("table", {class: "ranges"});
    const rb = el("tbody");
    n.ranges.forEach((r, i) => {
      const t = perChunk[i];
      const attrs = {class: "range", "data-ns": n.ns, "data-shard": r.shard, "data-chunk": String(i)};
      if (t) Object.assign(attrs, {"data-estimate": "true", "data-reads": String(t.numReads), "data-writes": String(t.numWrites), "data-inserts": String(t.numInserts)});
      const tr = el("tr", attrs);
      tr.append(el("td", {class: "mono"}, JSON.stringify(r.min) + " \u2192 " + JSON.stringify(r.max)), el("td", {}, "on " + r.shard),
                t ? el("td", {class: "num est", title: "estimated from sampled operations, not counted"},
                       "\u2248 " + fmtInt(t.numReads) + " reads \u00b7 \u2248 " + fmtInt(t.numWrites) + " writes \u00b7 \u2248 " + fmtInt(t.numInserts) + " inserts")
                  : el("td", {class: "num empty"}, evaluationOn ? "not estimated (not among the busiest)" : ""));
      rb.append(tr);
    });
    if (n.rangesOmitted) { const tr = el("tr"); tr.append(el("td", {class: "empty", colspan: "3"}, "\u2026 " + fmtInt(n.rangesOmitted) + " more ranges not listed")); rb.append(tr); }
    ranges.append(rb); box2.append(ranges); block.append(box2);
    box.append(block);
  }
}

function render(s, hist, chunks, evaluation) {
  const t = s.totals;
  const ops = t.ops;
  renderHealth(s.health);
  setText("total-ops", fmtInt(ops));
  setText("total-ops-sub", "since reset, " + spanText(s.windowSeconds) + " ago");
  // Every share below comes from /stats (stats/hosts_targeted.h): one definition, one denominator.
  const sharded = t.shardedOps;
  setText("targeted-share", sharded ? fmtPct(t.targetedShare) : "-");
  setText("targeted-sub", "oneShard, of " + fmtInt(sharded) + " ops on sharded collections");
  setText("broadcast-share", sharded ? fmtPct(t.allShardsShare) : "-");
  setText("broadcast-sub", "allShards, of " + fmtInt(sharded) + " ops on sharded collections");
  const h = t.hostsTargeted;
  setText("hosts-note", "% of the " + fmtInt(sharded) + " operations on sharded collections; unsharded ones are outside it");
  const hostsLegend = document.getElementById("hosts-legend");
  hostsLegend.replaceChildren();
  for (const c of HOSTS)
    hostsLegend.append(el("span", {"data-hosts": c, "data-count": String(h[c])},
                          c + " " + fmtInt(h[c]) + (t.hostsTargetedShare[c] != null ? " (" + fmtPct(t.hostsTargetedShare[c]) + ")" : "")));
  setText("total-errors", fmtInt(t.errors));
  const failed = (s.process.upstreamConnectFailures || 0) + (s.process.upstreamErrors || 0);
  setText("errors-sub", "replies with errors since reset \u00b7 " + fmtInt(failed) + " failed upstream connections since start");
  document.getElementById("errors-card").classList.toggle("hot", t.errors > 0 || (s.health && s.health.state === "down"));
  setText("connections", fmtInt(s.process.connectionsActive));
  setText("window", "since reset " + spanText(s.windowSeconds) + " \u00b7 up " + spanText(s.uptimeSeconds));

  const stack = document.getElementById("class-stack");
  const legend = document.getElementById("class-legend");
  stack.replaceChildren(); legend.replaceChildren();
  setText("class-note", "% of all " + fmtInt(ops) + " operations (commands without a collection, such as hello, included)");
  for (const c of CLASSES) {
    const n = t.targeting[c];
    if (!n) continue;
    const seg = el("div", {title: c + ": " + n});
    seg.style.width = (100 * t.targetingShare[c]) + "%";
    seg.style.background = "var(--" + c + ")";
    stack.append(seg);
    legend.append(swatch(el("span", {"data-class": c, "data-count": String(n)}, c + " " + fmtInt(n) + " (" + fmtPct(t.targetingShare[c]) + ")"), "var(--" + c + ")"));
  }

  renderHistory(hist);
  const hot = renderHot(s.hotness);
  renderShards(s, hist, hot);
  renderRoutingLoad(s, chunks, evaluation);
  renderKeys(chunks, evaluationVerdicts(evaluation), evaluation !== null);
  renderShapes(s);
  const hotNs = hot ? document.getElementById("hot-card").getAttribute("data-ns") : null;
  renderChunks(chunks, s, hot, hotNs, chunkTraffic(evaluation), evaluation !== null);
}

// The page's figures and health are only as fresh as the last /stats it read: when the sidecar does
// not answer, nothing may keep showing the last "UP" (the mongos may have gone down since).
let lastUpdate = null;
function renderStale(reason) {
  const card = document.getElementById("health-card");
  card.className = "card health-stale";
  card.setAttribute("data-state", "stale");
  setText("health-value", "NO DATA");
  const since = lastUpdate ? "since " + lastUpdate.toLocaleTimeString() : "yet";
  setText("health-sub", "the sidecar has not answered " + since);
  document.body.setAttribute("data-health", "stale");
  document.getElementById("banner").setAttribute("data-state", "stale");
  setText("banner-text", "NO DATA: this sidecar's admin endpoint does not answer (" + reason + "); upstream health unknown");
  setText("banner-detail", lastUpdate ? "every figure below is from " + lastUpdate.toLocaleTimeString() + ", the last answer"
                                      : "no figure has been read yet");
}

// /stats carries the health and the totals: without it the page is stale. /history, /chunks and
// /evaluate only fill their own panels, so one of them failing does not hold back the rest.
async function refresh() {
  const status = document.getElementById("status");
  const parts = await Promise.allSettled([getJson("stats"), getJson("history"), getJson("chunks"), getJson("evaluate")]);
  const auth = parts.find((p) => p.status === "rejected" && p.reason.auth);
  try {
    if (auth) throw auth.reason;
    if (parts[0].status === "rejected") throw parts[0].reason;
    const value = (p) => p.status === "fulfilled" ? p.value : null;
    render(parts[0].value, value(parts[1]), value(parts[2]), value(parts[3]));
    document.getElementById("auth").style.display = "none";
    lastUpdate = new Date();
    const missing = [];
    ["/history", "/chunks", "/evaluate"].forEach((path, i) => {
      if (parts[i + 1].status === "rejected") missing.push(path + " (" + parts[i + 1].reason.message + ")");
    });
    status.className = missing.length ? "err" : "";
    status.textContent = "updated " + lastUpdate.toLocaleTimeString() + (missing.length ? "; not refreshed: " + missing.join(", ") : "");
    document.body.setAttribute("data-loaded", "true");
  } catch (e) {
    if (e.auth) document.getElementById("auth").style.display = "flex";
    else renderStale(e.message);
    status.className = "err"; status.textContent = e.auth ? "token required" : "refresh failed: " + e.message;
  }
}
function loop() { refresh().finally(() => setTimeout(loop, 2000)); }
loop();
</script>
</body>
</html>
)shardscope";

// "\u{80}-\u{9f}\u{ad}..." : the hidden characters as a JavaScript regular expression's ranges.
std::string hiddenCharacterRanges() {
  std::string out;
  auto code = [&](char32_t c) { out += fmt::format("\\u{{{:x}}}", static_cast<uint32_t>(c)); };
  for (const auto& r : common::kHiddenCharacters) {
    code(r.first);
    if (r.last != r.first) out += "-", code(r.last);
  }
  return out;
}

}  // namespace

std::string_view dashboardPage() {
  static const std::string page = [] {
    std::string p(kPage);
    constexpr std::string_view kMark = "HIDDEN_CHARACTER_RANGES";
    p.replace(p.find(kMark), kMark.size(), hiddenCharacterRanges());
    return p;
  }();
  return page;
}

}  // namespace shardscope::admin
