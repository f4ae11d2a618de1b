#include "admin/admin_extensions.h"

#include "evaluation/sketch_redaction.h"
#include "rewrite/lookup_guard.h"
#include "common/json_writer.h"
#include "stats/prometheus_writer.h"

namespace shardscope::admin {
namespace {

AdminResponse json(std::string body) {
  AdminResponse r;
  r.contentType = "application/json";
  r.body = std::move(body);
  return r;
}

std::string_view queryValue(std::string_view query, std::string_view name) {
  while (!query.empty()) {
    auto amp = query.find('&');
    auto pair = query.substr(0, amp);
    if (pair.substr(0, pair.find('=')) == name && pair.find('=') != std::string_view::npos)
      return pair.substr(pair.find('=') + 1);
    if (amp == std::string_view::npos) break;
    query.remove_prefix(amp + 1);
  }
  return {};
}

constexpr routing::Targeting kClasses[] = {routing::Targeting::Single, routing::Targeting::Multi,
                                           routing::Targeting::Broadcast, routing::Targeting::Unsharded,
                                           routing::Targeting::NoCollection, routing::Targeting::Unclassified};
constexpr rewrite::FallbackCause kCauses[] = {rewrite::FallbackCause::EmptyRead, rewrite::FallbackCause::MissingInValue,
                                              rewrite::FallbackCause::NoMatchWrite, rewrite::FallbackCause::Unverifiable};

std::string renderRewrite(const proxy::ProxyContext& ctx) {
  std::string out;
  common::JsonWriter w(out);
  w.beginArray();
  auto set = ctx.lookups.get();
  for (const auto& entry : set ? set->entries : std::vector<rewrite::LookupSet::Entry>{}) {
    const auto& index = entry.index;
    const auto& rule = index->rule();
    auto& st = index->stats();
    auto m = index->store().counters();
    w.beginObject().field("ns", std::string_view(rule.ns)).field("lookupField", std::string_view(rule.lookup_field));
    w.key("addFields").beginArray();
    for (const auto& f : rule.add_fields) w.value(std::string_view(f));
    w.endArray();
    w.field("applied", st.applied());
    w.key("targetingBefore").beginObject();
    for (auto t : kClasses) w.field(routing::targetingName(t), st.before(t));
    w.endObject().key("targetingAfter").beginObject();
    for (auto t : kClasses) w.field(routing::targetingName(t), st.after(t));
    w.endObject().key("fallbacks").beginObject();
    for (auto c : kCauses) w.field(rewrite::fallbackCauseName(c), st.fallbacks(c));
    w.endObject().key("targetingRerun").beginObject();
    for (auto t : kClasses) w.field(routing::targetingName(t), st.rerun(t));
    w.endObject().key("rerunOutcome").beginObject();
    w.field("mappingWrong", st.rerunFound()).field("foundNothing", st.rerunEmpty());
    w.endObject().key("skipped").beginObject();
    for (const auto& [why, n] : st.skipped()) w.field(why, n);
    w.endObject().key("mapping").beginObject();
    w.field("size", m.size).field("capacity", m.capacity).field("hits", m.hits).field("misses", m.misses);
    w.field("learned", m.learned).field("corrected", m.corrected).field("evicted", m.evicted).field("forgotten", m.forgotten);
    w.field("ambiguous", m.ambiguous).field("moved", m.moved).field("suspended", m.suspended);
    w.endObject();
    if (entry.collection) {
      auto c = entry.collection->counters();
      w.key("mappingCollection").beginObject().field("name", std::string_view(rule.mapping_collection));
      w.field("lookups", c.lookups).field("found", c.found).field("notFound", c.not_found);
      w.field("published", c.published).field("errors", c.errors).field("dropped", c.dropped);
      w.field("ambiguous", c.ambiguous).field("polls", c.polls).endObject();
    }
    w.endObject();
  }
  w.endArray();
  return out;
}

void appendRewriteMetrics(const proxy::ProxyContext& ctx, std::string& out) {
  using stats::Metric;
  auto set = ctx.lookups.get();
  if (!set || set->entries.empty()) return;
  std::vector<std::shared_ptr<rewrite::LookupIndex>> indexes;
  for (const auto& e : set->entries) indexes.push_back(e.index);
  stats::PrometheusWriter w(out);
  w.family(Metric::rewrites_total);
  for (const auto& index : indexes)
    for (auto b : kClasses)
      if (index->stats().before(b))
        w.sample(Metric::rewrites_total, {index->rule().ns, routing::targetingName(b)},
                 static_cast<uint64_t>(index->stats().before(b)));
  w.family(Metric::rewrite_fallbacks_total);
  for (const auto& index : indexes)
    for (auto c : kCauses)
      w.sample(Metric::rewrite_fallbacks_total, {index->rule().ns, rewrite::fallbackCauseName(c)},
               static_cast<uint64_t>(index->stats().fallbacks(c)));
  w.family(Metric::rewrite_mappings);
  for (const auto& index : indexes)
    w.sample(Metric::rewrite_mappings, {index->rule().ns}, static_cast<uint64_t>(index->store().counters().size));
  w.family(Metric::rewrite_ambiguous);
  for (const auto& index : indexes)
    w.sample(Metric::rewrite_ambiguous, {index->rule().ns}, static_cast<uint64_t>(index->store().counters().ambiguous));
}

}  // namespace

AdminExtension evaluationExtension(proxy::ProxyContext& ctx) {
  AdminExtension ext;
  if (!ctx.evaluator) return ext;
  auto* evaluator = ctx.evaluator.get();
  ext.routes.push_back({"/evaluate", "GET, HEAD", [evaluator](std::string_view query) {
                          if (queryValue(query, "format") == "text") {
                            AdminResponse r;
                            r.body = evaluator->renderText();
                            return r;
                          }
                          return json(evaluator->renderJson());
                        }});
  // Field values leave the process only with evaluation.allow_values: hashes and counts otherwise.
  const bool values = ctx.config.evaluation_allow_values;
  ext.routes.push_back({"/evaluate/sketches", "GET, HEAD", [evaluator, values](std::string_view) {
                          std::string sketches = evaluator->exportSketches();
                          return json(values ? sketches : evaluation::sketchesWithoutValues(sketches));
                        }});
  ext.routes.push_back({"/evaluate/reset", "POST", [evaluator](std::string_view) {
                          evaluator->reset();
                          return json("{\"reset\":true}\n");
                        }});
  return ext;
}

AdminExtension rewriteExtension(proxy::ProxyContext& ctx) {
  AdminExtension ext;
  ext.routes.push_back({"/rewrite", "GET, HEAD", [&ctx](std::string_view) { return json(renderRewrite(ctx)); }});
  // Forgets every mapping, ambiguous values included (after fixing data that broke a rule's assertion).
  ext.routes.push_back({"/rewrite/reset", "POST", [&ctx](std::string_view) {
                          if (auto set = ctx.lookups.get())
                            for (const auto& e : set->entries) e.index->store().clear();
                          return json("{\"reset\":true}\n");
                        }});
  ext.stats_sections.emplace_back("rewrite", [&ctx] { return renderRewrite(ctx); });
  ext.metrics.push_back([&ctx](std::string& out) { appendRewriteMetrics(ctx, out); });
  return ext;
}

AdminExtension configExtension(proxy::Reloader& reloader) {
  AdminExtension ext;
  ext.routes.push_back({"/config", "GET, HEAD", [&reloader](std::string_view) { return json(reloader.renderJson()); }});
  ext.routes.push_back({"/config/reload", "POST", [&reloader](std::string_view) {
                          std::string error;
                          if (reloader.reload(error)) return json("{\"reloaded\":true}\n");
                          AdminResponse r = json("{\"reloaded\":false,\"error\":" + [&] {
                            std::string quoted;
                            common::JsonWriter::appendString(error, quoted);
                            return quoted;
                          }() + "}\n");
                          r.status = 400;
                          return r;
                        }});
  return ext;
}

AdminExtension shadowExtension(proxy::ProxyContext& ctx) {
  AdminExtension ext;
  if (ctx.mirror) {
    auto* mirror = ctx.mirror.get();
    ext.routes.push_back({"/mirror", "GET, HEAD", [mirror](std::string_view) { return json(mirror->renderJson()); }});
    ext.routes.push_back({"/mirror/reset", "POST", [mirror](std::string_view) {
                            mirror->reset();
                            return json("{\"reset\":true}\n");
                          }});
    ext.stats_sections.emplace_back("mirror", [mirror] { return mirror->renderJson(); });
    ext.metrics.push_back([mirror](std::string& out) { mirror->renderPrometheus(out); });
  }
  ext.stats_sections.emplace_back("faults", [&ctx] {
    auto faults = ctx.faults.get();
    return faults ? faults->renderJson() : std::string("{\"enabled\":false}");
  });
  ext.metrics.push_back([&ctx](std::string& out) {
    if (auto faults = ctx.faults.get()) faults->renderPrometheus(out);
  });
  if (ctx.capture) {
    auto* capture = ctx.capture.get();
    ext.stats_sections.emplace_back("capture", [capture] { return capture->renderJson(); });
    ext.metrics.push_back([capture](std::string& out) { capture->renderPrometheus(out); });
  }
  return ext;
}

}  // namespace shardscope::admin
