// JSON and text renderings of namespace reports: analyzeShardKey's figures and shardscope's
// additions per candidate, the per-candidate lines of the text report, and the written defence
// (defence.h) after them.
#include <cmath>
#include <cstdio>

#include "evaluation/analysis.h"
#include "evaluation/defence.h"
#include "evaluation/defence_sentences.h"
#include "evaluation/report_text.h"
#include "common/json_writer.h"
#include "common/name_text.h"
#include "common/query_shape.h"

namespace shardscope::evaluation {

namespace {

std::string pct(double x) { return percentText(x); }

std::string writeSafetyText(const CandidateResult& c) { return writeSafetySentence(c); }

std::string propertyLines(const NamespaceReport& r, const CandidateResult& c) {
  std::string t;
  const auto& lead = leadName(c);
  t += "  Cardinality  ";
  if (r.inserts == 0)
    t += "no documents observed (inserts or upserts).";
  else if (c.pattern.size() > 1 && c.prefix_cardinality > 0)
    t += lead + " ~" + num(c.prefix_cardinality) + " distinct (HyperLogLog); the full key ~" + num(c.cardinality) +
         " (" + c.cardinality_method + ").";
  else
    t += "~" + num(c.cardinality) + " distinct values (" + c.cardinality_method + ").";
  t += c.pass_cardinality ? " Pass." : r.inserts == 0 ? " Fails: nothing to split on." : " Fails: fewer than " + num(64.0 * r.shards) + " values cannot keep " +
                                             std::to_string(r.shards) + " shards split finely.";
  t += insertsOnlyNote(c) + "\n";
  t += "  Frequency    ";
  if (c.pattern.size() > 1 && c.simulated_inserts + r.inserts > 0)
    t += "top " + lead + " value" + (c.prefix_top_label.empty() ? "" : " " + c.prefix_top_label) + " = " + pct(c.prefix_top_share) +
         " of inserts; full key: top value " + pct(c.top_share) + ", top 5 " + pct(c.top5_share) + ".";
  else if (!c.top_values.empty())
    t += "top value " + c.top_values[0].first + " = " + pct(c.top_share) + " of inserts; top 5 = " + pct(c.top5_share) + ".";
  else if (r.inserts > 0)
    t += "no observed document carries this key: not judged.";
  else
    t += "no documents observed (inserts or upserts): not judged.";
  t += absentLeadText(c);
  if (!c.pass_frequency)
    t += " Fails: " + c.frequency_reason + ".";
  else if (c.top_values.empty())
    ;
  else if (c.jumbo_risk)
    t += " Jumbo risk: that value's chunk cannot be split and passes " + bytesText(128.0 * 1024 * 1024) +
         " once the collection reaches " + bytesText(c.jumbo_at_bytes) + ".";
  else
    t += " Pass.";
  t += "\n  Monotonic    ";
  if (c.hashed_prefix)
    t += "No: the leading field is hashed.";
  else
    t += std::string(c.monotonic ? "Yes: " : "No: ") + pct(c.new_extreme_share) +
         " of inserts set a new maximum or minimum; rank correlation with arrival order " + fixed(c.rank_correlation, 2) +
         (c.leading_type == "ObjectId" ? " (ObjectId: its leading bytes are a timestamp)."
          : c.leading_type == "date"   ? " (a date)."
                                       : ".");
  t += c.pass_monotonicity ? " Pass.\n" : " Fails.\n";
  if (r.reads + r.writes + r.other_shape_ops == 0)  // no share of nothing claimed as 0.0%
    t += "  Routes       no read or write observed yet.";
  else
    t += "  Routes       " + pct(c.targeted) + " of reads and writes targeted" + rewriteText(c) + ".";
  if (r.reads > 0)
    t += " Reads: " + pct(c.read_single) + " single-shard, " + pct(c.read_multi) + " multi-shard, " + pct(c.read_scatter) +
         " scatter-gather (analyzeShardKey's classes); targeted reads touch " + fixed(c.targeted_read_shards, 2) + " of " +
         std::to_string(r.shards) + " simulated shards.";
  if (r.writes > 0)
    t += " Writes: " + pct(c.write_single) + " single-shard, " + pct(c.write_multi) + " multi-shard, " +
         pct(c.write_scatter) + " scatter-gather; single-document writes without the key " +
         pct(c.single_writes_without_key) + ", shard-key updates " + pct(c.shard_key_updates) + ".";
  t += writeSafetyText(c);
  if (c.array_share > 0)
    t += "\n  Arrays       " + pct(c.array_share) +
         " of documents hold an array on a key path: MongoDB refuses to insert them under this key (\"Shard key cannot "
         "contain array values or array descendants\"). Fails.";
  t += "\n  Inserts      " + std::to_string(r.shards) + " simulated shards" +
       (c.split_on.empty() ? "" : " (chunks split on " + common::textName(c.split_on) + ")") + ": " + sharesText(c) + " (" + ratioText(c) + ")" +
       (hasWarning(c, "imbalance") ? "; uneven (warning)" : "") + ".\n";
  return t;
}

uint64_t countOf(const CandidateResult& c, OpKind k) {
  uint64_t n = 0;
  for (const auto& s : c.shapes)
    if (s.kind == k) n += s.count;
  return n;
}

// analyzeShardKey's keyCharacteristics, from the same numbers as the rest of the candidate.
// mostCommonValues' values follow the redaction rule (hashes unless evaluation.allow_values).
void writeKeyCharacteristics(common::JsonWriter& w, const NamespaceReport& r, const CandidateResult& c) {
  w.key("keyCharacteristics").beginObject();
  w.key("numDocsTotal").value(r.inserts);
  w.key("numDocs").value(r.inserts);
  w.key("numDocsSampled").value(c.pattern.size() > 1 ? static_cast<uint64_t>(c.simulated_inserts) : r.inserts);
  w.key("numDistinctValues").value(static_cast<uint64_t>(std::llround(c.cardinality)));
  w.key("mostCommonValues").beginArray();
  for (const auto& [label, share] : c.top_values)
    w.beginObject()
        .key("value")
        .value(label)
        .key("frequency")
        .value(static_cast<uint64_t>(std::llround(share * static_cast<double>(r.inserts))))
        .endObject();
  w.endArray();
  w.key("monotonicity").beginObject();
  if (r.inserts == 0) {
    w.key("type").value("unknown");
  } else {
    w.key("type").value(c.monotonic ? "monotonic" : "not monotonic");
    if (!c.hashed_prefix) w.key("recordIdCorrelationCoefficient").value(c.rank_correlation);
  }
  w.endObject();
  w.key("avgDocSizeBytes").value(static_cast<uint64_t>(std::llround(r.avg_doc_bytes)));
  w.endObject();
}

// What analyzeShardKey does not report, in its own sub-document.
void writeAdditions(common::JsonWriter& w, const NamespaceReport& r, const CandidateResult& c) {
  w.key("shardscope").beginObject();
  w.key("mutability").beginObject();
  w.key("percentageOfShardKeyUpdates").value(100 * c.shard_key_updates);
  w.key("requires").value("retryable write or transaction, through mongos, with equality on the full key (4.2+)");
  w.key("pass").value(c.pass_mutability);
  w.endObject();
  w.key("upsertTargeting").beginObject();
  w.key("percentageOfWritesUpsertsWithoutShardKey").value(100 * c.upserts_without_key);
  w.key("percentageOfUpsertsWithoutShardKey").value(100 * c.upserts_without_key_of_upserts);
  w.key("percentageOfWritesRefusedBefore71").value(100 * c.refused_before_71);
  w.key("pass").value(c.pass_upserts);
  w.endObject();
  w.key("arrays").beginObject();
  w.key("shareOfDocuments").value(c.array_share);
  w.key("pass").value(c.pass_arrays);
  w.endObject();
  w.key("frequencyReason").value(c.frequency_reason);
  w.key("largestPrefixSuffix").beginObject();
  w.key("sampledDocuments").value(static_cast<uint64_t>(c.suffix_samples));
  w.key("distinctKeys").value(c.suffix_distinct);
  w.key("monotonic").value(c.suffix_monotonic);
  w.endObject();
  w.key("simulatedClusterSplitsOn").value(c.split_on);
  // Reads and writes carrying no collation that target only if the unseen default collation is simple.
  w.key("percentageTargetedOnlyIfDefaultCollationSimple").value(100 * c.collation_assumed);
  // Those a known non-simple default collation broadcasts, which a simple collation would target.
  w.key("percentageBroadcastByDefaultCollation").value(100 * c.collation_broadcast);
  w.key("rewrite").beginObject();
  w.key("inForce").value(c.rewrite_in_force);
  if (c.rewrite_in_force) w.key("rule").value(r.lookup_rule.lookup_field + " -> " + [&] {
    std::string a;
    for (const auto& f : r.lookup_rule.add_fields) a += (a.empty() ? "" : ",") + f;
    return a;
  }());
  const double after_rewrite = c.rewrite_in_force ? c.targeted_after_rewrite : c.targeted;
  w.key("singleOrMultiShardShareAsSent").value(c.targeted);
  w.key("singleOrMultiShardShareAfterRewrite").value(after_rewrite);
  // The names earlier releases gave the same figures, kept for their readers (docs/evaluation.md).
  w.key("targetedShareAsSent").value(c.targeted);
  w.key("targetedShareAfterRewrite").value(after_rewrite);
  w.key("rescuedShapes").beginArray();
  for (const auto& s : c.rescued_shapes) w.value(s);
  w.endArray();
  w.endObject();
  w.endObject();
}

void writeCandidate(common::JsonWriter& w, const NamespaceReport& r, const CandidateResult& c, size_t rank) {
  w.beginObject();
  w.key("key").raw(c.key_json);
  w.key("rank").value(static_cast<uint64_t>(rank + 1));
  w.key("sources").beginArray();
  for (const auto& s : c.sources) w.value(s);
  w.endArray();
  w.key("evaluable").value(c.evaluable);
  if (!c.evaluable) {  // no figure rather than a 0 standing for "unknown"
    w.key("notEvaluable").value("not evaluable, because " + c.not_evaluable);
    w.endObject();
    return;
  }
  w.key("passes").value(c.passes());
  w.key("failures").beginArray();
  for (const auto& s : c.failures) w.value(s);
  w.endArray();
  w.key("warnings").beginArray();
  for (const auto& s : c.warnings) w.value(s);
  w.endArray();
  // analyzeShardKey's single- plus multi-shard share of the sampled reads and writes under this key;
  // not /stats' targetedShare (oneShard of every operation on a sharded collection, as routed now).
  w.key("singleOrMultiShardShare").value(c.targeted);
  w.key("targetedShare").value(c.targeted);  // its earlier name, kept for its readers (docs/evaluation.md)
  writeKeyCharacteristics(w, r, c);
  w.key("readDistribution").beginObject();
  w.key("sampleSize").beginObject();
  w.key("total").value(c.reads_sampled);
  for (OpKind k : {OpKind::Find, OpKind::Aggregate, OpKind::Count, OpKind::Distinct}) w.key(opKindName(k)).value(countOf(c, k));
  w.endObject();
  w.key("percentageOfSingleShardReads").value(100 * c.read_single);
  w.key("percentageOfMultiShardReads").value(100 * c.read_multi);
  w.key("percentageOfScatterGatherReads").value(100 * c.read_scatter);
  w.key("meanShardsTouched").value(c.read_shards);
  w.key("meanShardsTouchedWhenTargeted").value(c.targeted_read_shards);
  w.key("numReadsByRange").beginArray();
  for (double v : c.range_reads) w.value(static_cast<uint64_t>(std::llround(v)));
  w.endArray();
  w.endObject();
  w.key("writeDistribution").beginObject();
  w.key("sampleSize").beginObject();
  w.key("total").value(c.writes_sampled);
  for (OpKind k : {OpKind::Update, OpKind::Delete, OpKind::FindAndModify}) w.key(opKindName(k)).value(countOf(c, k));
  w.endObject();
  w.key("percentageOfSingleShardWrites").value(100 * c.write_single);
  w.key("percentageOfMultiShardWrites").value(100 * c.write_multi);
  w.key("percentageOfScatterGatherWrites").value(100 * c.write_scatter);
  w.key("percentageOfShardKeyUpdates").value(100 * c.shard_key_updates);
  w.key("percentageOfSingleWritesWithoutShardKey").value(100 * c.single_writes_without_key);
  w.key("percentageOfMultiWritesWithoutShardKey").value(100 * c.multi_writes_without_key);
  w.key("numWritesByRange").beginArray();
  for (double v : c.range_writes) w.value(static_cast<uint64_t>(std::llround(v)));
  w.endArray();
  w.endObject();
  writeAdditions(w, r, c);
  w.key("byShape").beginArray();
  for (const auto& s : c.shapes) {
    w.beginObject();
    w.key("id").value(common::shapeIdHex(s.id));
    w.key("shape").value(s.shape);
    w.key("command").value(opKindName(s.kind));
    // Two units under one id: commands (what /stats counts) and statements (what the shares weigh;
    // `count` is kept for readers of schema 1 and equals `statements`).
    w.key("commands").value(s.commands);
    w.key("statements").value(s.count);
    w.key("count").value(s.count);
    w.key("single").value(s.single);
    w.key("multi").value(s.multi);
    w.key("scatterGather").value(s.scatter);
    w.key("meanShardsTouched").value(s.shards);
    w.endObject();
  }
  w.endArray();
  w.key("cardinality").beginObject();
  w.key("estimate").value(c.cardinality);
  w.key("method").value(c.cardinality_method);
  w.key("prefixEstimate").value(c.prefix_cardinality);
  w.key("pass").value(c.pass_cardinality);
  w.endObject();
  w.key("frequency").beginObject();
  w.key("topShare").value(c.top_share);
  w.key("top5Share").value(c.top5_share);
  w.key("prefixTopShare").value(c.prefix_top_share);
  w.key("mostCommonValues").beginArray();
  for (const auto& [l, s] : c.top_values) w.beginObject().key("value").value(l).key("share").value(s).endObject();
  w.endArray();
  w.key("pass").value(c.pass_frequency);
  w.endObject();
  w.key("monotonicity").beginObject();
  w.key("type").value(c.hashed_prefix ? "not monotonic" : c.monotonic ? "monotonic" : "not monotonic");
  w.key("newExtremeShare").value(c.new_extreme_share);
  w.key("rankCorrelation").value(c.rank_correlation);
  w.key("leadingType").value(c.leading_type);
  w.key("pass").value(c.pass_monotonicity);
  w.endObject();
  w.key("simulatedCluster").beginObject();
  w.key("shards").value(r.shards);
  w.key("inserts").value(c.simulated_inserts);
  w.key("insertShare").beginArray();
  for (double s : c.shard_insert_share) w.value(s);
  w.endArray();
  if (c.max_min_ratio > 0)
    w.key("maxMinRatio").value(c.max_min_ratio);
  else
    w.key("maxMinRatio").null();
  w.key("maxShare").value(maxShare(c));
  w.key("jumboRisk").value(c.jumbo_risk);
  if (c.jumbo_risk) w.key("jumboAtCollectionBytes").value(c.jumbo_at_bytes);
  w.endObject();
  w.endObject();
}

}  // namespace

std::string renderReportsJson(const std::vector<NamespaceReport>& reports, const ObservationCounters* counters,
                              int64_t since_ms, const routing::RoutingLoad* load) {
  std::string out;
  common::JsonWriter w(out);
  w.beginObject();
  // The period every figure below covers: /stats counts since its own resetAt.
  if (since_ms > 0) w.key("observedSince").value(common::isoTime(since_ms));
  // Which load of the routing table the current keys come from, as /stats states the one in force.
  if (load && load->generation > 0) routing::writeRoutingLoad(w.key("routing"), *load);
  w.key("namespaces").beginArray();
  for (const auto& r : reports) {
    w.beginObject();
    w.key("ns").value(common::utf8Name(r.ns));  // as the export and /metrics show it
    w.key("simulatedShards").value(r.shards);
    w.key("defaultCollation").value(defaultCollationName(r.default_collation));
    w.key("reads").value(r.reads);
    w.key("writes").value(r.writes);
    w.key("inserts").value(r.inserts);
    w.key("upserted").value(r.upserted);
    w.key("upsertsMatched").value(r.upserts_matched);
    w.key("replacements").value(r.replacements);
    w.key("otherShapeOps").value(r.other_shape_ops);
    w.key("avgDocBytes").value(r.avg_doc_bytes);
    w.key("memoryBytes").value(static_cast<uint64_t>(r.memory_bytes));
    w.key("verdict").beginObject();
    if (r.recommended >= 0) {
      w.key("key").raw(r.candidates[r.recommended].key_json);
      w.key("passesAllProperties").value(r.recommended_passes);
    } else {
      w.key("key").null();
      if (!r.no_recommendation.empty()) w.key("notEvaluable").value("not evaluable, because " + r.no_recommendation);
    }
    w.key("text").value(defence(r));
    w.endObject();
    w.key("candidates").beginArray();
    for (size_t i = 0; i < r.candidates.size(); ++i) writeCandidate(w, r, r.candidates[i], i);
    w.endArray();
    w.key("migrationPlan");
    writeMigrationPlanJson(w, r.migration);
    if (r.current_chunks > 0) {  // chunk positions and shard indexes only: no bound values
      w.key("currentKeyRanges").beginObject();
      w.key("numChunks").value(static_cast<uint64_t>(r.current_chunks));
      w.key("hotRanges").beginArray();
      for (const auto& h : r.hot_ranges)
        w.beginObject()
            .key("chunk")
            .value(static_cast<uint64_t>(h.chunk))
            .key("shard")
            .value(static_cast<uint64_t>(h.shard))
            .key("numReads")
            .value(static_cast<uint64_t>(std::llround(h.reads)))
            .key("numWrites")
            .value(static_cast<uint64_t>(std::llround(h.writes)))
            .key("numInserts")
            .value(static_cast<uint64_t>(std::llround(h.inserts)))
            .endObject();
      w.endArray();
      w.endObject();
    }
    w.endObject();
  }
  w.endArray();
  if (counters) {
    w.key("droppedEvents").value(counters->dropped_events);
    w.key("truncatedRequests").value(counters->truncated_requests);
    w.key("refusedInserts").value(counters->refused_inserts);
    w.key("unprovenInserts").value(counters->unproven_inserts);
    w.key("retriedInserts").value(counters->retried_inserts);
    w.key("transactionWritesPending").value(counters->transaction_writes_pending);
    w.key("transactionWritesOutcomeUnknown").value(counters->transaction_writes_outcome_unknown);
  }
  w.endObject();
  return out;
}

namespace {

std::string rightAligned(std::string s, size_t width) { return std::string(width > s.size() ? width - s.size() : 0, ' ') + s; }

// The shapes' table: a share of statements, then both counts under their own names (a batched
// write's statements each count; /stats counts its command once) and the id every surface shows.
std::string shapeTable(const std::vector<ShapeOutcome>& shapes, double all) {
  std::string t = "Query shape                                                        share*   commands  statements  shape id\n";
  t += "-------------------------------------------------------------------------------------------------------------\n";
  for (const auto& s : shapes) {
    std::string l = common::truncateUtf8(shapeLabel(s), 64, "...");
    l.resize(std::max<size_t>(l.size(), 66), ' ');
    t += l + " " + rightAligned(pct(all > 0 ? s.count / all : 0), 6) + " " +
         rightAligned(num(static_cast<double>(s.commands)), 10) + " " + rightAligned(num(static_cast<double>(s.count)), 11) +
         "  " + common::shapeIdHex(s.id) + "\n";
  }
  t += "* share of reads and writes (not inserts), in statements; commands: as /stats counts them under the same id\n";
  return t;
}

}  // namespace

std::string renderReportsText(const std::vector<NamespaceReport>& reports, int64_t since_ms) {
  std::string t;
  if (since_ms > 0)
    t += "Observed since " + common::isoTime(since_ms) +
         " (the sidecar's start or POST /evaluate/reset; /stats counts since its own resetAt).\n\n";
  if (reports.empty()) return t + "No namespaces observed yet.\n";
  for (const auto& r : reports) {
    t += common::textName(r.ns) + ": " + num(static_cast<double>(r.reads)) + " reads, " +
         num(static_cast<double>(r.writes)) + " writes (update/delete/findAndModify), " +
         num(static_cast<double>(r.inserts)) + " inserts observed (" + num(static_cast<double>(r.upserted)) +
         " of them by upserts; " + num(static_cast<double>(r.upserts_matched)) +
         " upserts updated an existing document; " + num(static_cast<double>(r.replacements)) +
         " replacements); simulated cluster of " + std::to_string(r.shards) + " shards; default collation " +
         defaultCollationName(r.default_collation) + ".\n\n";
    double all = static_cast<double>(r.reads + r.writes + r.other_shape_ops);
    t += shapeTable(r.shapes, all);
    t += "\nCandidates, ranked:\n";
    for (size_t i = 0; i < r.candidates.size(); ++i) {
      const auto& c = r.candidates[i];
      if (!c.evaluable) {
        t += "\n" + std::to_string(i + 1) + ". " + c.label + "   (not evaluable)\n  Not evaluable, because " + c.not_evaluable + ".\n";
        continue;
      }
      t += "\n" + std::to_string(i + 1) + ". " + c.label + (static_cast<int>(i) == r.recommended ? "   <- recommended" : "") +
           (c.passes() ? "" : "   (fails " + c.failures[0] + ")") + "\n";
      t += propertyLines(r, c);
    }
    t += "\n" + defence(r) + "\n";
    if (r.migration.present) t += "\n" + migrationPlanText(r.migration);
  }
  // Key labels and query shapes hold client names as JSON, which leaves DEL and C1 controls raw.
  return common::printableText(t);
}

}  // namespace shardscope::evaluation
