#include "features/rewrite_feature.h"

#include "common/json_writer.h"
#include "rewrite/lookup_guard.h"
#include "rewrite/lookup_rewrite.h"
#include "stats/prometheus_writer.h"
#include "stats/rescued_share.h"

namespace shardscope::features {
namespace {

constexpr routing::Targeting kClasses[] = {routing::Targeting::Single, routing::Targeting::Multi,
                                           routing::Targeting::Broadcast, routing::Targeting::Unsharded,
                                           routing::Targeting::NoCollection, routing::Targeting::Unclassified};
constexpr rewrite::FallbackCause kCauses[] = {rewrite::FallbackCause::EmptyRead, rewrite::FallbackCause::MissingInValue,
                                              rewrite::FallbackCause::NoMatchWrite, rewrite::FallbackCause::Unverifiable,
                                              rewrite::FallbackCause::Unconfirmed, rewrite::FallbackCause::FailedRead};

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
    // Every lookup the rule saw (rewritten or skipped, e.g. no mapping known) and those rescued
    // (rewritten and kept): one share for every surface, the skipped ones in its denominator, but
    // not the commands that already name an added field (targeted without the rewrite).
    uint64_t skipped = 0, fellBack = 0;
    for (const auto& [why, n] : st.skipped())
      if (why != rewrite::kAlreadyConstrained) skipped += n;
    for (auto c : kCauses) fellBack += st.fallbacks(c);
    const uint64_t lookups = st.applied() + skipped;
    w.field("lookups", lookups);
    stats::writeRescued(w, stats::rescuedShare(st.applied(), fellBack, lookups));
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
    w.endObject().key("events").beginObject();
    for (const auto& [what, n] : st.events()) w.field(what, n);
    w.endObject().key("mapping").beginObject();
    w.field("size", m.size).field("capacity", m.capacity).field("hits", m.hits).field("misses", m.misses);
    w.field("learned", m.learned).field("corrected", m.corrected).field("evicted", m.evicted).field("forgotten", m.forgotten);
    w.field("ambiguous", m.ambiguous).field("moved", m.moved).field("suspended", m.suspended);
    w.field("bytes", m.bytes).field("maxBytes", m.max_bytes).field("keysHashed", m.keys_hashed);
    w.field("valuesTooLong", m.values_too_long);
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
  w.family(Metric::rewrite_mapping_bytes);
  for (const auto& index : indexes)
    w.sample(Metric::rewrite_mapping_bytes, {index->rule().ns}, static_cast<uint64_t>(index->store().counters().bytes));
}

}  // namespace

bool RewriteFeature::setUp(const config::Config& config, proxy::ProxyContext& ctx, std::string& error) {
  ctx_ = &ctx;
  auto lookups = rewrite::buildLookupSet(config.rewrite_rules, ctx.own_connection_uri, nullptr, error);
  if (!lookups) return false;
  ctx.lookups.publish(std::move(lookups));
  return true;
}

void RewriteFeature::extendAdmin(admin::AdminExtension& ext) {
  proxy::ProxyContext& ctx = *ctx_;
  ext.routes.push_back({"/rewrite", "GET, HEAD", [&ctx](std::string_view) { return admin::jsonResponse(renderRewrite(ctx)); }});
  // Forgets every mapping, ambiguous values included (after fixing data that broke a rule's assertion).
  ext.routes.push_back({"/rewrite/reset", "POST", [&ctx](std::string_view) {
                          if (auto set = ctx.lookups.get())
                            for (const auto& e : set->entries) e.index->reset();
                          return admin::jsonResponse("{\"reset\":true}\n");
                        }});
  ext.stats_sections.emplace_back("rewrite", [&ctx] { return renderRewrite(ctx); });
  // The rules' counters restart with the shapes' (their per-shape 'rescued' is the registry's);
  // the mappings stay.
  ext.on_stats_reset.push_back([&ctx] {
    if (auto set = ctx.lookups.get())
      for (const auto& e : set->entries) e.index->stats().reset();
  });
  ext.metrics.push_back([&ctx](std::string& out) { appendRewriteMetrics(ctx, out); });
}

// Rules whose text did not change keep their learned mappings (buildLookupSet reuses them).
bool RewriteFeature::prepareReload(const config::Config& next, std::function<void()>& apply, std::string& error) {
  auto lookups = rewrite::buildLookupSet(next.rewrite_rules, ctx_->own_connection_uri, ctx_->lookups.get().get(), error);
  if (!lookups) return false;
  apply = [ctx = ctx_, lookups] { ctx->lookups.publish(lookups); };
  return true;
}

void RewriteFeature::adoptReloadable(config::Config& to, const config::Config& from) const {
  to.rewrite_rules = from.rewrite_rules;
}

}  // namespace shardscope::features
