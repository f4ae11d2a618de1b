#include "evaluation/analysis.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <map>
#include <set>
#include <unordered_map>

#include "common/bson_order.h"
#include "common/command_fields.h"
#include "common/json_writer.h"
#include "common/utf8.h"
#include "evaluation/candidate_figures.h"
#include "evaluation/key_facts_from_samples.h"
#include "evaluation/key_samples.h"
#include "evaluation/report_text.h"
#include "evaluation/sampled_filter.h"
#include "evaluation/value_codec.h"
#include "rewrite/lookup_rule.h"
#include "routing/chunk_map.h"
#include "routing/query_targeting.h"
#include "routing/routing_table.h"

namespace shardscope::evaluation {

namespace {

void addUnique(std::vector<std::string>& v, std::string s) {
  if (std::find(v.begin(), v.end(), s) == v.end()) v.push_back(std::move(s));
}

bool staticDoc(std::string_view bytes, bson_t& out) {
  return bson_init_static(&out, reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size());
}

// A field name is a client's: written as an escaped JSON string, so whatever it holds (quotes,
// backslashes, a whole "x": "hashed" pair) it stays one field of the pattern. Its bytes are kept
// as they came: the pattern reader judges them, as it judges a configured key's.
std::string patternJson(const std::vector<std::pair<std::string, bool>>& fields) {
  std::string s = "{";
  for (size_t i = 0; i < fields.size(); ++i) {
    if (i) s += ", ";
    common::JsonWriter::appendString(fields[i].first, s, common::JsonWriter::InvalidUtf8::Keep);
    s += fields[i].second ? ": \"hashed\"" : ": 1";
  }
  return s + "}";
}

// Whether a path reads unambiguously unquoted in a key label: no characters the label itself uses
// ('{', '}', ',', ':', quotes, spaces), no control characters, nothing that is not UTF-8.
bool plainPath(std::string_view path) {
  if (path.empty() || !common::isValidUtf8(path)) return false;
  for (char ch : path) {
    const auto c = static_cast<unsigned char>(ch);
    if (c <= 0x20 || c == 0x7F || std::strchr("{}[],:\"'\\", ch)) return false;
  }
  return true;
}

}  // namespace

std::string keyLabel(const routing::ShardKeyPattern& p) {
  std::string s = "{";
  for (size_t i = 0; i < p.size(); ++i) {
    if (i) s += ", ";
    const std::string& path = p.field(i).path;
    if (plainPath(path)) s += path;
    else common::JsonWriter::appendString(path, s);  // {"a: 1, b": 1} is one field, not two
    s += p.field(i).hashed ? ": \"hashed\"" : ": 1";
  }
  return s + "}";
}

// The key at which a filter's equality prefix starts (the rest at MinKey): where a targeted
// prefix query begins reading. False when the filter does not pin the leading field.
bool prefixProbe(const bson_t& filter, const routing::ShardKeyPattern& key, routing::KeyPoint& out) {
  out.size = key.size();
  size_t pinned = 0;
  for (size_t i = 0; i < key.size(); ++i) out.fields[i] = routing::Bound::minKey();
  for (size_t i = 0; i < key.size() && pinned == i; ++i) {
    bson_iter_t it;
    if (!bson_iter_init_find(&it, &filter, key.field(i).path.c_str())) break;
    if (common::isOperatorDocument(it)) {
      bson_iter_t ops;
      bson_iter_recurse(&it, &ops);
      if (!bson_iter_next(&ops) || std::strcmp(bson_iter_key(&ops), "$eq") != 0) break;
      it = ops;
    }
    if (BSON_ITER_HOLDS_ARRAY(&it) || BSON_ITER_HOLDS_REGEX(&it)) break;
    out.fields[i] = routing::Bound::of(*bson_iter_value(&it));
    ++pinned;
  }
  return pinned > 0;
}

// Reads, writes (sampled filters that pin the full key or its leading fields, weighted by their
// shape's count) and
// inserts (the sampled documents, scaled to every insert) per chunk of the current key.
void hotRanges(const NamespaceState& st, const routing::CollectionRouting& coll, NamespaceReport& r) {
  const size_t chunks = coll.chunks.chunkCount();
  r.current_chunks = chunks;
  if (chunks == 0) return;
  std::vector<NamespaceReport::HotRange> per(chunks);
  for (size_t i = 0; i < chunks; ++i) per[i].chunk = i, per[i].shard = coll.chunks.chunkShard(i);
  for (const auto& [h, s] : st.shapes) {
    if (s.samples.empty()) continue;
    const double w = static_cast<double>(s.count) / static_cast<double>(s.samples.size());
    for (const auto& fbytes : s.samples) {
      bson_t f;
      SampleCollation carried;
      if (!readSampledFilter(fbytes, f, carried)) continue;
      const bool collated = runsNonSimple(
          carried, coll.simple_default_collation ? DefaultCollation::Simple : DefaultCollation::NonSimple);
      routing::FilterTarget ft;
      routing::targetFilter(coll, f, !collated, routing::TargetOptions{}, ft, nullptr);
      routing::KeyPoint probe;
      if (ft.key_pinned) {
        probe = ft.key;
      } else if (ft.targeting == routing::Targeting::Broadcast || coll.key.field(0).hashed ||
                 !prefixProbe(f, coll.key, probe)) {
        continue;  // scatter-gather: no one range
      }
      auto& range = per[coll.chunks.chunkForKey(probe.span())];
      (isRead(s.kind) ? range.reads : range.writes) += w;
    }
  }
  const double scale = st.reservoir.empty() ? 0 : static_cast<double>(st.inserts) / static_cast<double>(st.reservoir.size());
  for (const auto& sample : st.reservoir) {
    bson_t d;
    routing::KeyPoint key;
    if (!staticDoc(sample.doc, d) || coll.key.extractFromDocument(d, key) != routing::KeyExtractStatus::Ok) continue;
    per[coll.chunks.chunkForKey(key.span())].inserts += scale;
  }
  std::stable_sort(per.begin(), per.end(), [](const auto& a, const auto& b) {
    return a.reads + a.writes + a.inserts > b.reads + b.writes + b.inserts;
  });
  for (size_t i = 0; i < per.size() && i < 10 && per[i].reads + per[i].writes + per[i].inserts > 0; ++i)
    r.hot_ranges.push_back(per[i]);
}

std::vector<std::pair<std::string, std::vector<std::string>>> candidateKeys(const NamespaceState& st,
                                                                           const routing::ShardKeyPattern* current_key,
                                                                           const std::vector<std::string>& configured_keys,
                                                                           size_t max_shapes, size_t max_candidates) {
  std::vector<std::pair<std::string, std::string>> wanted;  // json, source
  if (current_key) wanted.push_back({current_key->toJson(), "current"});
  for (const auto& k : configured_keys) wanted.push_back({k, "configured"});
  wanted.push_back({"{\"_id\": 1}", "baseline"});
  wanted.push_back({"{\"_id\": \"hashed\"}", "baseline"});
  std::vector<const ShapeState*> byCount;
  for (const auto& [h, s] : st.shapes) byCount.push_back(&s);
  std::sort(byCount.begin(), byCount.end(), [](const ShapeState* a, const ShapeState* b) {
    return a->count != b->count ? a->count > b->count : a->shape < b->shape;
  });
  std::vector<std::pair<std::string, std::string>> singles, hashes, compounds, hcompounds, ranges, hsuffixes;
  for (size_t i = 0; i < byCount.size() && i < max_shapes; ++i) {
    const ShapeState& s = *byCount[i];
    FieldRoles roles = shapeRoles(s);
    std::vector<std::string> rangeish = roles.range;
    for (const auto& sf : s.sort) addUnique(rangeish, sf);
    // Equality pairs in filter order: an upsert (seed 000's bucket) or a point lookup pinning an
    // entity and a second field names its own compound key.
    for (size_t a = 0; a + 1 < roles.eq.size() && a < 3; ++a) {
      compounds.push_back({patternJson({{roles.eq[a], false}, {roles.eq[a + 1], false}}), "traffic"});
      hcompounds.push_back({patternJson({{roles.eq[a], true}, {roles.eq[a + 1], false}}), "traffic"});
    }
    for (const auto& e : roles.eq) {
      singles.push_back({patternJson({{e, false}}), "traffic"});
      hashes.push_back({patternJson({{e, true}}), "traffic"});
      // A hashed _id after the equality field (MongoDB 4.4+): queries on the field still target its
      // chunks, and a value too busy for one shard spreads its documents by their _id's hash.
      if (e != "_id") hsuffixes.push_back({patternJson({{e, false}, {"_id", true}}), "traffic"});
      for (const auto& rf : rangeish) {
        if (rf == e) continue;
        compounds.push_back({patternJson({{e, false}, {rf, false}}), "traffic"});
        hcompounds.push_back({patternJson({{e, true}, {rf, false}}), "traffic"});
      }
    }
    for (const auto& rf : roles.range) ranges.push_back({patternJson({{rf, false}}), "traffic"});
  }
  // Interleave the kinds, each in shape order without repeats: the cap then keeps every kind's
  // variants of the dominant shapes (a wide workload's many equality fields once filled it with
  // ranged and hashed singles and compounds before any {field: 1, _id: "hashed"} was proposed).
  std::vector<std::vector<std::pair<std::string, std::string>>*> kinds = {&singles, &compounds, &hashes,
                                                                         &hcompounds, &ranges, &hsuffixes};
  for (auto* kind : kinds) {
    std::set<std::string> met;
    std::erase_if(*kind, [&](const auto& w) { return !met.insert(w.first).second; });
  }
  for (size_t i = 0;; ++i) {
    bool more = false;
    for (auto* kind : kinds)
      if (i < kind->size()) wanted.push_back((*kind)[i]), more = true;
    if (!more) break;
  }

  std::vector<std::pair<std::string, std::vector<std::string>>> out;
  std::map<std::string, size_t> seen;
  for (const auto& [json, source] : wanted) {
    std::string error;
    auto p = routing::ShardKeyPattern::fromJson(json, error);
    if (!p) continue;
    std::string canon = p->toJson();
    auto it = seen.find(canon);
    if (it != seen.end()) {
      auto& srcs = out[it->second].second;
      if (std::find(srcs.begin(), srcs.end(), source) == srcs.end()) srcs.push_back(source);
      continue;
    }
    if (out.size() >= max_candidates) continue;
    seen.emplace(canon, out.size());
    out.push_back({canon, {source}});
  }
  return out;
}

namespace {

// The candidate keys to judge (current, configured, baselines, from traffic), each with its sources.
void listCandidates(const NamespaceState& st, const AnalysisOptions& opt, const routing::ShardKeyPattern* current_key,
                    const std::vector<std::string>& configured_keys, NamespaceReport& r) {
  for (auto& [canon, sources] : candidateKeys(st, current_key, configured_keys, kRankedShapes, opt.max_candidates)) {
    std::string error;
    auto p = routing::ShardKeyPattern::fromJson(canon, error);
    if (!p) continue;
    CandidateResult c;
    c.pattern = *p;
    c.key_json = canon;
    c.label = keyLabel(*p);
    c.sources = std::move(sources);
    r.candidates.push_back(std::move(c));
  }
}

// Which fields the observed filters name, and how: the share of traffic naming each candidate's
// leading field by equality or by range (the defence says why a key targets nothing).
void measureLeadRoles(const NamespaceState& st, NamespaceReport& r) {
  std::vector<std::pair<FieldRoles, double>> roles_by_shape;
  const double all_ops = static_cast<double>(st.reads + st.writes + st.other_shape_ops);
  for (const auto& [h, s] : st.shapes) roles_by_shape.push_back({shapeRoles(s), all_ops > 0 ? s.count / all_ops : 0});
  for (auto& c : r.candidates) {
    const std::string& lead = c.pattern.field(0).path;
    for (const auto& [roles, share] : roles_by_shape) {
      if (std::find(roles.eq.begin(), roles.eq.end(), lead) != roles.eq.end())
        c.lead_eq_share += share;
      else if (std::find(roles.range.begin(), roles.range.end(), lead) != roles.range.end())
        c.lead_range_share += share;
    }
  }
}

// Each candidate from this process' own samples, or from the facts every merged export carries;
// a candidate some export lacks facts for is marked not evaluable rather than guessed.
void evaluateCandidates(const NamespaceState& st, const AnalysisOptions& nsopt, NamespaceReport& r) {
  for (auto& c : r.candidates) {
    if (st.fact_exports == 0) {  // this process' own samples
      evaluateCandidate(st, nsopt, c,
                        factsFromSamples(st, c.pattern, nsopt.lookup_rule, nsopt.simulated_shards,
                                         nsopt.monotonic_correlation, nsopt.jumbo_warn_share, nsopt.default_collation));
      continue;
    }
    const KeyFacts* k = st.importedFacts(c.key_json);
    if (k && k->exports == st.fact_exports) {
      evaluateCandidate(st, nsopt, c, *k);
      continue;
    }
    // Evidence missing: nothing is guessed, and the ranking puts it after every evaluable key.
    c.evaluable = false;
    c.not_evaluable = "its routing and sampled-document facts came from " + std::to_string(k ? k->exports : 0) + " of the " +
                      std::to_string(st.fact_exports) +
                      " exports merged (a sidecar evaluated other candidates, or runs a version that exports no facts)";
  }
}

// The most a key could target, from what every export carries (each shape's count and the fields
// its filters pin or bound), for a key whose routing facts some export lacks: a shape can only be
// targeted when its filters name the key's leading field by equality, by a range when that field is
// not hashed, or by the lookup field when the rewrite adds the leading field.
double targetedShareBound(const NamespaceState& st, const CandidateResult& c, const rewrite::LookupRule* rule) {
  const double all = static_cast<double>(st.reads + st.writes + st.other_shape_ops);
  if (all <= 0) return 0;
  const auto& lead = c.pattern.field(0);
  const bool rewritten = rule && std::find(rule->add_fields.begin(), rule->add_fields.end(), lead.path) != rule->add_fields.end();
  auto names = [](const std::vector<std::string>& v, const std::string& f) { return std::find(v.begin(), v.end(), f) != v.end(); };
  double bound = 0;
  for (const auto& [h, s] : st.shapes) {
    const FieldRoles roles = shapeRoles(s);
    if (names(roles.eq, lead.path) || (!lead.hashed && names(roles.range, lead.path)) ||
        (rewritten && names(roles.eq, rule->lookup_field)))
      bound += static_cast<double>(s.count);
  }
  return std::min(1.0, bound / all);
}

// A recommendation stands only if no key the exports could not evaluate might rank above it: one
// that might pass where the leader fails, or target more than the leader does. Otherwise the
// ranking would rest on missing evidence (a sidecar whose traffic never proposed the key), and
// nothing is recommended; the reason names the key and what it could reach.
std::string unrankedRival(const NamespaceState& st, const NamespaceReport& r, const rewrite::LookupRule* rule) {
  const CandidateResult& leader = r.candidates[0];
  const double leader_score = rankScore(leader);
  for (const auto& c : r.candidates) {
    if (c.evaluable) continue;
    const double bound = targetedShareBound(st, c, rule);
    if (!leader.passes() && bound > 0)
      return c.label + " might pass every property where " + leader.label + " fails, and its leading field is named by " +
             percentText(bound) + " of reads and writes, but it is not evaluable, because " + c.not_evaluable;
    if (bound > leader_score + 0.005)
      return c.label + " could target up to " + percentText(bound) + " of reads and writes (its leading field is named there), more than the " +
             percentText(leader_score) + " of " + leader.label + ", but it is not evaluable, because " + c.not_evaluable;
  }
  return {};
}

}  // namespace

namespace {

bool warns(const CandidateResult& c, const char* w) { return std::find(c.warnings.begin(), c.warnings.end(), w) != c.warnings.end(); }

bool inForce(const CandidateResult& c) { return std::find(c.sources.begin(), c.sources.end(), "current") != c.sources.end(); }

bool hashedSuffix(const CandidateResult& c) { return c.pattern.hasHashedField() && !c.hashed_prefix; }

// A hashed non-prefix field (`{roomId: 1, _id: "hashed"}`) against another key (ranged, or hashed
// first with a ranged suffix): it scatters each prefix value's documents over its chunks (a query
// on the prefix reads them all, never one shard by the full key), and buys one thing, even inserts.
// It ranks first, on warnings, only when the other key's inserts are uneven and its own are not;
// otherwise the other key keeps locality.
bool hashedSuffixRanksFirst(const CandidateResult& hashed, const CandidateResult& ranged) {
  return warns(ranged, "imbalance") && !warns(hashed, "imbalance");
}

}  // namespace

double rankScore(const CandidateResult& c) {
  return std::max(0.0, c.targeted_after_rewrite - c.refused_share_of_all - (c.coarse_prefix ? c.multi_overall : 0.0));
}

RankStep rankedBefore(const CandidateResult& a, const CandidateResult& b) {
  auto step = [](bool a_first, RankStep s) { return a_first ? s : RankStep::None; };
  auto card = [](const CandidateResult& c) { return c.cardinality; };
  auto score = [](const CandidateResult& c) { return rankScore(c); };
  if (a.evaluable != b.evaluable) return step(a.evaluable, RankStep::Evaluable);
  if (!a.evaluable) return RankStep::None;
  if (a.passes() != b.passes()) return step(a.passes(), RankStep::Passes);
  if (!a.passes() && a.failures.size() != b.failures.size()) return step(a.failures.size() < b.failures.size(), RankStep::Failures);
  if (std::fabs(score(a) - score(b)) > 0.005) return step(score(a) > score(b), RankStep::Score);
  // The key in force keeps a tie that nothing above breaks: another key would buy nothing the
  // figures show, and moving to it costs a reshardCollection (hours, the collection copied).
  if (inForce(a) != inForce(b) && a.passes() && a.warnings.size() == b.warnings.size()) return step(inForce(a), RankStep::Current);
  if (hashedSuffix(a) != hashedSuffix(b)) {
    const bool buys = hashedSuffix(a) ? hashedSuffixRanksFirst(a, b) : hashedSuffixRanksFirst(b, a);
    return step(hashedSuffix(a) == buys, buys ? RankStep::Warnings : RankStep::Locality);
  }
  if (a.warnings.size() != b.warnings.size()) return step(a.warnings.size() < b.warnings.size(), RankStep::Warnings);
  if (a.hashed_prefix != b.hashed_prefix) return step(!a.hashed_prefix, RankStep::Locality);  // keep locality unless hashing buys something
  if (std::fabs(card(a) - card(b)) > 0.1 * std::max(card(a), card(b))) return step(card(a) > card(b), RankStep::Cardinality);
  if (std::fabs(a.single_overall - b.single_overall) > 0.005) return step(a.single_overall > b.single_overall, RankStep::SingleShard);
  return step(a.pattern.size() < b.pattern.size(), RankStep::KeyLength);
}

namespace {

// Ranking: pass every property (the three, mutability, upsert targeting, arrays), then the share
// of traffic targeted (after the lookup rewrite, when one is in force), less the writes MongoDB
// refuses before 7.1 and runs as two-phase broadcasts after; then the recommendation.
// Too little traffic to judge any key: fewer documents than the distinct values cardinality asks
// for, while the leading candidate fails it only for that (each document so far holds a value of
// its own, which says nothing of the collection), and as few reads and writes. "" when there are
// enough, or none were inserted (a collection only read is judged on what it shows).
std::string tooLittleData(const NamespaceState& st, const NamespaceReport& r, const AnalysisOptions& opt) {
  const double needed = static_cast<double>(opt.min_distinct_per_shard) * r.shards;
  const CandidateResult& leader = r.candidates[0];
  const double docs = static_cast<double>(st.inserts);
  const uint64_t ops = st.reads + st.writes;
  // Plenty of reads and writes still show which key the traffic needs (a bucket collection's
  // upserts pin {sensorId, bucketStart} long before it holds 256 buckets).
  if (docs == 0 || docs >= needed || static_cast<double>(ops) >= needed || leader.pass_cardinality ||
      leader.cardinality < 0.9 * docs)
    return {};
  return "too little traffic to judge a key yet: " + num(docs) + " documents observed, while a key must show " +
         num(needed) + " distinct values (" + std::to_string(opt.min_distinct_per_shard) +
         " per simulated shard) to pass cardinality, "
         "and so far each document holds a value of its own, which says nothing of the collection; the leading "
         "candidate "
         "so far is " +
         leader.label +
         (ops ? " (" + percentText(leader.targeted) + " of " + num(static_cast<double>(ops)) +
                    " reads and writes targeted)"
              : ". No read or write was observed yet, so what a key would target is not known") +
         "; let the sidecar observe more traffic";
}

void rankCandidates(const NamespaceState& st, NamespaceReport& r, const AnalysisOptions& opt) {
  const rewrite::LookupRule* rule = opt.lookup_rule;
  std::stable_sort(r.candidates.begin(), r.candidates.end(),
                   [](const CandidateResult& a, const CandidateResult& b) { return rankedBefore(a, b) != RankStep::None; });
  if (!r.candidates.empty() && !r.candidates[0].evaluable && (st.reads + st.writes + st.inserts) > 0) {
    r.no_recommendation = "no candidate key can be evaluated from the exports merged: " + r.candidates[0].not_evaluable;
  } else if (!r.candidates.empty() && (st.reads + st.writes + st.inserts) > 0) {
    r.no_recommendation = unrankedRival(st, r, rule);
    if (r.no_recommendation.empty()) r.no_recommendation = tooLittleData(st, r, opt);
    if (!r.no_recommendation.empty()) return;
    r.recommended = 0;
    r.recommended_passes = r.candidates[0].passes();
  }
}

}  // namespace

DefaultCollation defaultCollationOf(std::string_view ns, const AnalysisOptions& opt,
                                    const routing::CollectionRouting* current_routing) {
  if (current_routing)
    return current_routing->simple_default_collation ? DefaultCollation::Simple : DefaultCollation::NonSimple;
  auto it = opt.default_collations.find(ns);
  return it == opt.default_collations.end() ? DefaultCollation::Unknown : it->second;
}

NamespaceReport analyzeNamespace(const NamespaceState& st, const AnalysisOptions& opt,
                                 const routing::ShardKeyPattern* current_key,
                                 const std::vector<std::string>& configured_keys,
                                 const routing::CollectionRouting* current_routing) {
  NamespaceReport r;
  r.ns = st.ns();
  r.shards = opt.simulated_shards;
  r.reads = st.reads;
  r.writes = st.writes;
  r.inserts = st.inserts;
  r.other_shape_ops = st.other_shape_ops;
  r.upserted = st.upserted;
  r.upserts_matched = st.upserts_matched;
  r.replacements = st.replacements;
  r.avg_doc_bytes = st.inserts ? static_cast<double>(st.insert_bytes) / st.inserts : 0;
  r.memory_bytes = st.memoryBytes();
  if (current_routing) hotRanges(st, *current_routing, r);
  listCandidates(st, opt, current_key, configured_keys, r);
  AnalysisOptions nsopt = opt;
  nsopt.lookup_rule = nullptr;
  for (const auto& rule : opt.lookup_rules)
    if (rule.ns == st.ns()) nsopt.lookup_rule = &rule;
  nsopt.default_collation = defaultCollationOf(st.ns(), opt, current_routing);
  r.default_collation = nsopt.default_collation;
  r.rewrite_in_force = nsopt.lookup_rule != nullptr;
  if (nsopt.lookup_rule) r.lookup_rule = *nsopt.lookup_rule;
  r.facts_from_exports = st.fact_exports;
  measureLeadRoles(st, r);
  evaluateCandidates(st, nsopt, r);

  // Shapes, without targeting, by count.
  for (const auto& [h, s] : st.shapes) {
    ShapeOutcome o;
    o.id = h;
    o.shape = s.shape;
    o.kind = s.kind;
    o.count = s.count;
    o.commands = s.commands;
    r.shapes.push_back(std::move(o));
  }
  std::sort(r.shapes.begin(), r.shapes.end(), [](const ShapeOutcome& a, const ShapeOutcome& b) {
    return a.count != b.count ? a.count > b.count : a.shape < b.shape;
  });
  rankCandidates(st, r, nsopt);
  return r;
}

// Shared with render.cpp, so a reason quotes the number the text shows.
std::string percentText(double x) {
  char b[32];
  std::snprintf(b, sizeof b, x > 0 && x < 0.001 ? "%.2f%%" : "%.1f%%", 100.0 * x);
  return b;
}

}  // namespace shardscope::evaluation
