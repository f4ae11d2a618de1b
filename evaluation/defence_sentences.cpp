#include "evaluation/defence_sentences.h"

#include <vector>

#include "evaluation/report_text.h"

namespace shardscope::evaluation {

namespace {

std::string pct(double x) { return percentText(x); }

std::string shapeText(const ShapeOutcome& s) {
  std::string k = opKindName(s.kind);
  return s.shape.rfind(k, 0) == 0 ? s.shape : k + " " + s.shape;
}

std::string addedFields(const NamespaceReport& r) {
  std::string a;
  for (const auto& f : r.lookup_rule.add_fields) a += (a.empty() ? "" : ", ") + f;
  return a;
}

// A shape as the key would run it: after the lookup rewrite when one is in force.
double scatterAsRun(const CandidateResult& c, const ShapeOutcome& s) {
  return c.rewrite_in_force ? s.scatter_after_rewrite : s.scatter;
}

}  // namespace

std::string writeSafetySentence(const CandidateResult& c) {
  std::string t;
  const std::string as_run = c.rewrite_in_force ? " (as the lookup rewrite sends them)" : "";
  if (c.shard_key_updates > 0)
    t += " " + pct(c.shard_key_updates) +
         " of writes change the key's value: MongoDB (4.2+) runs them only through mongos as a retryable write or in a "
         "transaction, with equality on the full key in the filter" +
         std::string(c.pass_mutability ? "." : "; mutability fails.");
  if (c.upserts_without_key > 0)
    t += " " + pct(c.upserts_without_key) + " of writes are upserts whose filter does not pin the full key" + as_run + " (" +
         pct(c.upserts_without_key_of_upserts) +
         " of upserts): refused before 7.1 (\"Failed to target upsert by query\"), a two-phase broadcast after" +
         (c.multi_upserts_without_key > 0
              ? ", except the updateMany upserts among them (" + pct(c.multi_upserts_without_key) +
                    " of writes), refused by every release (two-phase covers single-document writes only)"
              : std::string()) +
         std::string(c.pass_upserts ? "." : "; upsert targeting fails.");
  if (c.refused_before_71 > 0)
    t += " " + pct(c.refused_before_71) +
         " of writes are single-document updates, deletes or findAndModify that reach neither one shard nor an exact "
         "_id" + as_run + ": refused before 7.1, two-phase (a broadcast, then the write) after.";
  return t;
}

std::string acceptingSentence(const NamespaceReport& r, const CandidateResult& c) {
  const double all = static_cast<double>(r.reads + r.writes + r.other_shape_ops);
  std::vector<const ShapeOutcome*> broadcast, rescued;
  double share = 0;
  for (const auto& s : c.shapes) {
    if (all > 0 && scatterAsRun(c, s) > 0.5) broadcast.push_back(&s), share += s.count / all;
    else if (s.rescued) rescued.push_back(&s);
  }
  std::string rescue;
  if (!rescued.empty()) {
    rescue = "The lookup rewrite already adds " + addedFields(r) + " to ";
    for (size_t i = 0; i < rescued.size(); ++i) rescue += (i ? "; " : "") + shapeText(*rescued[i]);
    rescue += ", which turns " + std::string(rescued.size() > 1 ? "them" : "it") + " into targeted queries.";
  }
  if (broadcast.empty()) return "Nothing observed stays broadcast." + (rescue.empty() ? "" : " " + rescue) + "\n\n";
  std::string t = "What I am accepting: " + pct(share) + " of reads and writes stay broadcast" +
                  (c.rewrite_in_force ? " after the lookup rewrite" : "") + ": ";
  for (size_t i = 0; i < broadcast.size(); ++i)
    t += (i ? "; " : "") + shapeText(*broadcast[i]) + " (" + pct(broadcast[i]->count / all) + ")";
  t += ". Analytical ones belong on a secondary or an analytics store; point lookups on another field can carry " +
       leadName(c) + " at the API level (the caller usually has it), which turns a broadcast into a targeted query.";
  if (c.collation_broadcast > 0)  // those that do name the key are broadcast by the default collation, not by the key
    t += " Of them, " + pct(c.collation_broadcast) +
         " already name the key and are broadcast only by the collection's non-simple default collation (above).";
  if (!rescue.empty()) t += " " + rescue;
  return t + "\n\n";
}

std::string changeMindSentence(const NamespaceReport& r, const CandidateResult& c) {
  const double fair = 1.0 / std::max<uint32_t>(1, r.shards);
  const std::string lead = leadName(c);
  if (c.pattern.size() > 1 && !c.pattern.field(0).hashed) {
    const std::string suffix = pathName(c, 1);
    // What spreads a prefix value past one shard's share: a hashed _id after the prefix (a
    // compound hashed key, 4.4+; the evaluation weighs it as a candidate), or a synthetic prefix.
    const std::string remedy =
        lead == "_id" ? "a synthetic prefix" : "{" + lead + ": 1, _id: \"hashed\"} (its hashed _id spreads that value's documents while queries on " +
                                                   lead + " stay on its chunks) or a synthetic prefix";
    if (c.prefix_top_share < fair)
      return "if the top " + lead + " value grew from " + pct(c.prefix_top_share) + " to above " + pct(fair) +
             " of inserts (one shard's fair share), " +
             (c.pattern.field(1).hashed
                  ? "its documents would still spread over shards by the hash of their " + suffix + " values" +
                        (c.prefix_top_share >= 0.01 ? ", as they already do" : "") + ": fine while those stay many. "
              : c.suffix_monotonic
                  ? "the prefix would be too skewed even with the suffix, since that value's new documents go to the "
                    "chunk at the top of its " +
                        suffix + " range; then " + remedy + ". "
                  : "its documents would have to spread over shards on their " + suffix +
                        " values alone: fine while those stay many and do not grow with time, " + remedy +
                        " otherwise. ");
    // Already past the fair share: what holds it up is the suffix, so say what would break that.
    if (c.pattern.field(1).hashed)  // a hashed suffix never grows with time
      return "the top " + lead + " value already holds " + pct(c.prefix_top_share) + " of inserts, above one shard's fair share (" +
             pct(fair) + "), and spreads only by the hash of its " + suffix + " values; if those became few (under " +
             std::to_string(2 * r.shards) + "), frequency would fail. ";
    return "the top " + lead + " value already holds " + pct(c.prefix_top_share) + " of inserts, above one shard's fair share (" +
           pct(fair) + "), and spreads only on its " + suffix + " values; if those became few (under " +
           std::to_string(2 * r.shards) + ") or grew with time, frequency would fail; then " + remedy + ". ";
  }
  if (c.jumbo_risk && c.top_share < fair)
    return "if the top value kept growing past " + pct(fair) + " of inserts it would fail frequency outright. ";
  return "";
}

std::string insertsOnlyNote(const CandidateResult& c) {
  if (c.shard_key_updates <= 0) return "";
  return " These figures describe documents as inserted, upserted or replaced: " + pct(c.shard_key_updates) +
         " of writes change a key field by update, and the values they write are not counted (mongod would hold them).";
}

std::string coarsePrefixNote(const CandidateResult& c) {
  if (!c.coarse_prefix || c.multi_overall < 0.005) return "";
  const std::string lead = leadName(c);
  const std::string hashed = "{" + pathName(c, static_cast<size_t>(c.pattern.hashedField())) + ": \"hashed\"}";
  const size_t shards = c.range_reads.size();  // one entry per simulated shard
  return "but its " + lead + " prefix has ~" + num(c.prefix_cardinality) + " values, no more than the " +
         std::to_string(shards) + " shards, so it is in effect " + hashed +
         ": the " + pct(c.multi_overall) + " of reads and writes that pin " + lead +
         " but not the full key each read a value holding at least a shard's fair share on average, in chunks the "
         "balancer spreads over the shards (nothing keeps them together without zones), and rank as broadcasts";
}

std::string untargetedReason(const CandidateResult& c) {
  if (c.targeted >= 0.005) return "";
  const std::string lead = leadName(c);
  if (c.hashed_prefix && c.lead_range_share > 0)
    return "perfect spread, but the observed queries on " + lead + " bound it by a range (" + pct(c.lead_range_share) +
           " of traffic), and a range on a hashed field is a broadcast: fixes writes, makes reads worse";
  if (c.lead_eq_share == 0 && c.lead_range_share == 0)
    return std::string(c.hashed_prefix ? "perfect spread, but " : "") + "no observed query names " + lead +
           ", so every read broadcasts" + (c.hashed_prefix ? ": fixes writes, makes reads worse" : "");
  return "";
}

}  // namespace shardscope::evaluation
