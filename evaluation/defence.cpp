#include "evaluation/defence.h"

#include <algorithm>
#include <cmath>

#include "evaluation/defence_sentences.h"
#include "evaluation/report_text.h"
#include "common/name_text.h"

namespace shardscope::evaluation {

namespace {

std::string pct(double x) { return percentText(x); }

// How far the key can split: the prefix's and the full key's distinct values.
std::string cardinalityPart(const NamespaceReport& r, const CandidateResult& c) {
  bool unbounded = r.inserts > 0 && c.cardinality > 0 && c.cardinality >= 0.9 * static_cast<double>(r.inserts);
  if (!c.pass_cardinality && r.inserts > 0) {  // never "we can split" of a key that fails cardinality
    const std::string needed = num(64.0 * r.shards) + " distinct values (64 per simulated shard)";
    return unbounded ? "Cardinality is ~" + num(c.cardinality) +
                           " so far, one value per document: " + num(static_cast<double>(r.inserts)) +
                           " documents are too few to show the " + needed +
                           " cardinality asks for, though nothing seen caps it. "
                     : "Cardinality is ~" + num(c.cardinality) + ", under the " + needed +
                           " cardinality asks for: it fails cardinality, and no candidate passes every property. ";
  }
  if (c.pattern.size() > 1)
    return "Cardinality is ~" + num(c.prefix_cardinality) + " on the prefix and " +
           (unbounded ? "effectively unbounded with the suffix (about one value per document)"
                      : "~" + num(c.cardinality) + " with the suffix") +
           ", so we can split as far as we ever need to. ";
  return "Cardinality is ~" + num(c.cardinality) + (unbounded ? " (about one value per document)" : "") +
         ", so we can split as far as we need to. ";
}

// The largest value's share, and for a compound key how the suffix spreads the largest prefix.
std::string frequencyPart(const CandidateResult& c) {
  const std::string lead = leadName(c);
  std::string t;
  if (c.pattern.size() > 1 && !c.pattern.field(0).hashed && c.prefix_top_share > 0) {
    t += "Frequency: the top " + lead + " value holds " + pct(c.prefix_top_share) + " of inserts";
    if (c.prefix_top_share >= 0.01 && c.pattern.field(1).hashed)
      t += ", which would be a jumbo-chunk risk on {" + lead + ": 1} alone (its chunk passes " + bytesText(128.0 * 1024 * 1024) +
           " once the collection reaches " + bytesText(128.0 * 1024 * 1024 / c.prefix_top_share) + "), and the hashed " +
           pathName(c, 1) + " suffix spreads them: that value's documents split by the hash of " + pathName(c, 1) +
           " into chunks on several shards, so its new documents spread too, while a query on " + lead +
           " alone still targets only that value's chunks (mongos routes an equality on the prefix of a compound hashed key, "
           "MongoDB 4.4+), more than one shard for the busiest value";
    else if (c.prefix_top_share >= 0.01)
      t += ", which would be a jumbo-chunk risk on {" + lead + ": 1} alone (its chunk passes " + bytesText(128.0 * 1024 * 1024) +
           " once the collection reaches " + bytesText(128.0 * 1024 * 1024 / c.prefix_top_share) + "), and the " +
           pathName(c, 1) + " suffix removes it because that value's documents split by " + pathName(c, 1) +
           (c.suffix_monotonic ? " (its new documents still land at the top of its " + pathName(c, 1) + " range)" : "");
    t += "; the full key's top value is " + pct(c.top_share) + "." + absentLeadText(c) + " ";
    return t;
  }
  return "Frequency: the top value holds " + pct(c.top_share) + " of inserts" +
         (c.jumbo_risk ? ", a jumbo-chunk risk once the collection reaches " + bytesText(c.jumbo_at_bytes) + "."
                       : ", so no chunk is stuck on one value.") +
         absentLeadText(c) + " ";
}

// Why new documents spread, and the simulated cluster's busiest shard.
std::string monotonicityPart(const NamespaceReport& r, const CandidateResult& c) {
  std::string t;
  if (c.hashed_prefix)
    t += "It is not monotonic: the leading field is hashed, so consecutive values land on unrelated chunks";
  else
    t += "It is not monotonic: " + pct(c.new_extreme_share) + " of inserts set a new maximum or minimum, so new documents spread";
  if (c.simulated_inserts == 0)  // no busiest shard yet: not "takes 0.0%"
    return t + "; on " + std::to_string(r.shards) + " simulated shards the inserts are " + ratioText(c) + ". ";
  std::string uneven = ", uneven: I accept that as a warning";
  if (c.inserts_follow_prefix)  // say where the unevenness comes from, and that the prefix alone has it too
    uneven = ", uneven: the top " + leadName(c) + " value's new documents (" + pct(c.prefix_top_share) +
             " of inserts) all land in the chunk at the top of its " + pathName(c, 1) + " range, on one shard, as they would with " +
             leadName(c) + " alone as the key; I accept that as a warning";
  t += "; on " + std::to_string(r.shards) + " simulated shards the busiest takes " + pct(maxShare(c)) + " of inserts (" +
       ratioText(c) + (hasWarning(c, "imbalance") ? uneven : "") + "). ";
  return t;
}

// The share targeted, its largest targeted shape, and what the writes need of the key.
std::string routingPart(const NamespaceReport& r, const CandidateResult& c) {
  const ShapeOutcome* dominant = nullptr;
  for (const auto& s : c.shapes)
    if (s.scatter < 0.5) {
      dominant = &s;
      break;
    }
  double all = static_cast<double>(r.reads + r.writes + r.other_shape_ops);
  if (all == 0) return "No read or write was observed yet, so what it would target is not known.";
  std::string t = "And it targets " + pct(c.targeted) + " of reads and writes" + rewriteText(c);
  if (dominant && all > 0)
    t += ", including " + shapeLabel(*dominant) + " (" + pct(dominant->count / all) + " of traffic, " +
         fixed(dominant->targeted_shards, 2) + " shard each on the simulated cluster" +
         (dominant->single < 0.5 ? "; analyzeShardKey counts it multi-shard because it does not pin every key field" : "") + ")";
  t += ".";
  t += collationAssumedText(c);
  if (c.shard_key_updates > 0 || c.upserts_without_key > 0 || c.refused_before_71 > 0) t += writeSafetySentence(c);
  else if (r.writes > 0) t += r.upserted + r.upserts_matched > 0 ? " No observed update changes its value, and every upsert pins it."
                                                                  : " No observed update changes its value.";
  return t;
}

// What the runner-up, targeting as much as the choice, loses on: the ranking's own deciding step
// (analysis.h), so the reason given is the one that ranked it second ("" when none applies).
std::string tieLostOn(const CandidateResult& c, const CandidateResult& ru) {
  switch (rankedBefore(c, ru)) {
    case RankStep::Score:
      return c.refused_share_of_all < ru.refused_share_of_all
                 ? "its single-document writes that MongoDB refuses before 7.1 (" + pct(ru.refused_share_of_all) +
                       " of reads and writes; two-phase broadcasts after)"
                 : "the share it targets after the lookup rewrite (" + pct(ru.targeted_after_rewrite) + " against " +
                       pct(c.targeted_after_rewrite) + ")";
    case RankStep::Current:
      return "not being the key in force (moving from " + c.label +
             " to it would buy nothing these figures show and cost a reshardCollection)";
    case RankStep::Warnings: {
      for (const auto& w : ru.warnings)
        if (std::find(c.warnings.begin(), c.warnings.end(), w) == c.warnings.end())
          return w == "jumbo" ? "jumbo risk" : "insert balance";
      return "its warnings";
    }
    case RankStep::Locality:
      return ru.hashed_prefix ? "locality (a hashed prefix turns ranges on it into broadcasts)"
                              : "locality (its hashed " + pathName(ru, static_cast<size_t>(ru.pattern.hashedField())) +
                                    " scatters each " + leadName(ru) + " value's documents over its chunks, so a range or sort on "
                                    "it reads them all)";
    case RankStep::Cardinality: return "splittability (lower cardinality)";
    case RankStep::SingleShard:
      return "single-shard routing (" + pct(ru.single_overall) + " of reads and writes pin every field of it, against " +
             pct(c.single_overall) + ")";
    case RankStep::KeyLength: return "length (a key with fewer fields when nothing else differs)";
    default: return "";
  }
}

// The runner-up and what it loses on ("" when there is no evaluable one).
std::string runnerUpPart(const NamespaceReport& r, const CandidateResult& c) {
  if (r.candidates.size() <= 1 || !r.candidates[1].evaluable) return "";
  const CandidateResult& ru = r.candidates[1];
  std::string t = "The runner-up is " + ru.label + " (" + targetedText(r, ru) + " targeted";
  if (!ru.failures.empty()) t += ", fails " + ru.failures[0];
  if (!ru.warnings.empty()) t += ", warning: " + ru.warnings[0];
  t += ")";
  const std::string coarse = coarsePrefixNote(ru);  // the reason it ranks second, when it has one
  if (!coarse.empty()) t += ", " + coarse;
  if (coarse.empty() && std::fabs(ru.targeted - c.targeted) <= 0.005 && ru.passes()) {
    const std::string loses = tieLostOn(c, ru);
    if (!loses.empty()) t += ": it targets as much, and loses on " + loses;
  }
  return t + ". ";
}

// One rejected candidate's line: its share targeted and each failure and warning with its figure.
std::string rejectedLine(const NamespaceReport& r, const CandidateResult& o) {
  if (!o.evaluable) return "  " + o.label + ": not evaluable, because " + o.not_evaluable + ".\n";
  std::string t = "  " + o.label + ": " + targetedText(r, o) + " targeted";
  if (!o.failures.empty()) {
    t += "; fails";
    for (const auto& f : o.failures) t += " " + f;
  }
  if (o.monotonic)
    t += " (" + pct(o.new_extreme_share) + " of inserts are a new extreme" +
         (o.leading_type == "ObjectId" ? ", ObjectId" : o.leading_type == "date" ? ", a date" : "") + "; " +
         std::to_string(r.shards) + " simulated shards: " +
         (o.simulated_inserts ? "the busiest takes " + pct(maxShare(o)) + " of inserts)" : ratioText(o) + ")");
  if (!o.pass_cardinality) t += " (cardinality: ~" + num(o.cardinality) + " values)";
  if (!o.pass_frequency) t += " (frequency: " + o.frequency_reason + ")";
  if (!o.pass_mutability) t += " (mutability: " + pct(o.shard_key_updates) + " of writes change the key's value)";
  if (!o.pass_upserts) t += " (upsert targeting: " + pct(o.upserts_without_key_of_upserts) + " of upserts do not pin the full key)";
  if (!o.pass_arrays) t += " (arrays: " + pct(o.array_share) + " of documents hold an array on a key path)";
  for (const auto& w : o.warnings) {
    if (w == "jumbo") t += "; jumbo risk (top value " + pct(o.top_share) + " of inserts)";
    if (w == "imbalance") t += "; uneven inserts (" + ratioText(o) + ")";
  }
  if (o.passes() && o.hashed_prefix && !untargetedReason(o).empty()) t += "; " + untargetedReason(o);
  if (const std::string coarse = coarsePrefixNote(o); !coarse.empty()) t += "; " + coarse;
  return t + ".\n";
}

}  // namespace

std::string defence(const NamespaceReport& r) {
  if (r.recommended < 0 && !r.no_recommendation.empty()) return "No recommendation: " + r.no_recommendation + ".\n";
  if (r.recommended < 0) return "No traffic observed for " + common::textName(r.ns) + " yet.\n";
  const CandidateResult& c = r.candidates[r.recommended];
  std::string t;
  if (!c.passes())
    t += "No candidate passes every check (cardinality, frequency, monotonicity, mutability, upsert targeting, arrays). The least bad is " + c.label + " (fails " + c.failures[0] +
         (c.failures.size() > 1 ? " and more" : "") + "); fix the data model before sharding on any of these.\n\n";
  t += "Choice: " + c.label + ". ";
  t += cardinalityPart(r, c);
  t += frequencyPart(c);
  t += monotonicityPart(r, c);
  t += routingPart(r, c);
  t += "\n\n";
  t += acceptingSentence(r, c);  // what stays broadcast (as the key would run it)
  t += "What would change my mind: " + changeMindSentence(r, c);
  t += runnerUpPart(r, c);
  t += "\n\n";
  t += "Rejected:\n";
  for (size_t i = 0; i < r.candidates.size(); ++i)
    if (static_cast<int>(i) != r.recommended) t += rejectedLine(r, r.candidates[i]);
  return t;
}

}  // namespace shardscope::evaluation
