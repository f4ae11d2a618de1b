#include "evaluation/migration_plan.h"

#include <bson/bson.h>

#include <algorithm>
#include <cstdio>

#include "evaluation/analysis.h"
#include "evaluation/namespace_state.h"
#include "routing/key_bound.h"
#include "common/json_writer.h"
#include "common/name_text.h"

namespace shardscope::evaluation {
namespace {

std::string quoted(const std::string& s) {
  std::string out;
  common::JsonWriter::appendString(s, out);
  return out;
}

std::string fixed(double x, int digits) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", digits, x);
  return buf;
}

std::string pct(double x) { return fixed(100 * x, 1) + "%"; }

std::string bytesText(double b) {
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  int u = 0;
  while (b >= 1024 && u < 4) b /= 1024, ++u;
  return fixed(b, u ? 1 : 0) + " " + units[u];
}

// The current key's fields are a prefix of the winner's, field by field with the same kind: the
// key can be refined in place (refineCollectionShardKey adds suffix fields only).
bool refines(const routing::ShardKeyPattern& current, const routing::ShardKeyPattern& winner) {
  if (current.size() >= winner.size()) return false;
  for (size_t i = 0; i < current.size(); ++i)
    if (current.field(i).path != winner.field(i).path || current.field(i).hashed != winner.field(i).hashed) return false;
  return true;
}

// Split points at the quantiles of the full key over the sampled inserts (by document, so each
// initial chunk receives about the same share of inserts), without repeats or the minimum.
std::vector<std::string> splitPoints(const NamespaceState& st, const routing::ShardKeyPattern& pattern, uint32_t chunks,
                                     size_t& sampled) {
  std::vector<routing::KeyPoint> keys;
  keys.reserve(st.reservoir.size());
  for (const auto& s : st.reservoir) {
    bson_t d;
    if (!bson_init_static(&d, reinterpret_cast<const uint8_t*>(s.doc.data()), s.doc.size())) continue;
    routing::KeyPoint k;
    if (pattern.extractFromDocument(d, k) == routing::KeyExtractStatus::Ok) keys.push_back(k);
  }
  sampled = keys.size();
  std::vector<std::string> out;
  if (keys.size() < 2 * static_cast<size_t>(chunks)) return out;
  std::sort(keys.begin(), keys.end(), [](const auto& a, const auto& b) { return routing::compareKeys(a.span(), b.span()) < 0; });
  const routing::KeyPoint* last = &keys.front();
  for (uint32_t i = 1; i < chunks; ++i) {
    const routing::KeyPoint& k = keys[i * keys.size() / chunks];
    if (routing::compareKeys(k.span(), last->span()) == 0) continue;  // one value spans the quantiles
    last = &k;
    bson_t doc = BSON_INITIALIZER;
    routing::appendKeyDocument(pattern, k, &doc);
    char* json = bson_as_relaxed_extended_json(&doc, nullptr);
    if (json) out.emplace_back(json);
    bson_free(json);
    bson_destroy(&doc);
  }
  return out;
}

// Relaxed extended JSON as a mongosh literal: {"$date": "..."} is ISODate("...") there, and so on
// (in a JavaScript object literal the extended form would be a sub-document).
std::string mongoshLiteral(std::string json) {
  struct Form {
    const char* open;
    const char* call;
  };
  static constexpr Form kForms[] = {{"{ \"$date\" : \"", "ISODate(\""},
                                    {"{ \"$oid\" : \"", "ObjectId(\""},
                                    {"{ \"$numberLong\" : \"", "NumberLong(\""},
                                    {"{ \"$numberDecimal\" : \"", "NumberDecimal(\""}};
  for (const auto& f : kForms) {
    const std::string open = f.open;
    for (size_t at = json.find(open); at != std::string::npos; at = json.find(open, at)) {
      size_t end = json.find("\" }", at + open.size());
      if (end == std::string::npos) break;
      std::string inner = json.substr(at + open.size(), end - at - open.size());
      std::string call = std::string(f.call) + inner + "\")";
      json.replace(at, end + 3 - at, call);
      at += call.size();
    }
  }
  for (const auto& [from, to] : {std::pair<std::string, std::string>{"{ \"$minKey\" : 1 }", "MinKey"},
                                 std::pair<std::string, std::string>{"{ \"$maxKey\" : 1 }", "MaxKey"}})
    for (size_t at = json.find(from); at != std::string::npos; at = json.find(from, at)) json.replace(at, from.size(), to);
  return json;
}

const CandidateResult* currentKey(const NamespaceReport& r) {
  for (const auto& c : r.candidates)
    if (std::find(c.sources.begin(), c.sources.end(), "current") != c.sources.end()) return &c;
  return nullptr;
}

}  // namespace

MigrationPlan planMigration(const NamespaceState& st, const NamespaceReport& r, bool allow_values) {
  MigrationPlan p;
  if (r.recommended < 0 || r.recommended >= static_cast<int>(r.candidates.size())) return p;
  const CandidateResult& w = r.candidates[r.recommended];
  const CandidateResult* now = currentKey(r);
  p.present = true;
  // Shown by the one rule for client names (common/name_text.h), as the export carries it: a name
  // that is not UTF-8 writes the same command here and in a fleet's merge (evaluate --from), and
  // two such names never write the same command.
  p.ns = common::utf8Name(r.ns);
  p.key_json = w.key_json;
  p.targeted_share_after = w.targeted;
  p.targeted_known = r.reads + r.writes + r.other_shape_ops > 0;
  p.targeted_share_now = now ? now->targeted : -1;

  // What the observation says about volume and rate.
  int64_t first = 0, last = 0;
  uint64_t sampled = 0;
  st.sampleSpan(first, last, sampled);  // the reservoir's, or the sidecars' exported spans
  p.observed_seconds = sampled >= 2 ? static_cast<double>(last - first) / 1e6 : 0;
  p.avg_doc_bytes = r.avg_doc_bytes;
  if (p.observed_seconds >= 1) {
    p.writes_per_second = static_cast<double>(r.inserts + r.writes) / p.observed_seconds;
    p.inserted_bytes_per_second = static_cast<double>(st.insert_bytes) / p.observed_seconds;
  }

  const std::string coll = p.ns.substr(p.ns.find('.') + 1);
  const std::string indexJson = "{\"createIndexes\": " + quoted(coll) + ", \"indexes\": [{\"key\": " + w.key_json +
                                ", \"name\": \"shardKey\"}]}";
  const uint32_t shards = std::max<uint32_t>(1, r.shards);
  if (now && now->key_json == w.key_json) {
    p.action = "keep";
    p.presplit = "none";
    p.presplit_note = "the recommended key is the current one: nothing to migrate";
    return p;
  }
  if (!now) {
    p.action = "shardCollection";
    p.index_json = indexJson;
    p.index_note = "needed before shardCollection unless the collection is empty (then shardCollection creates it)";
  } else if (refines(now->pattern, w.pattern)) {
    p.action = "refineCollectionShardKey";
    p.index_json = indexJson;
    p.index_note = "refineCollectionShardKey needs an index on the refined key first";
  } else {
    p.action = "reshardCollection";
    p.index_note = "reshardCollection builds the index on the new key itself";
  }
  p.command_json = "{\"" + p.action + "\": " + quoted(p.ns) + ", \"key\": " + w.key_json;

  // Initial split.
  if (p.action == "shardCollection" && w.hashed_prefix) {
    p.presplit = "hashed";
    p.initial_chunks = 2 * shards;
    p.command_json += ", \"numInitialChunks\": " + std::to_string(p.initial_chunks);
    p.presplit_note = "a hashed leading field spreads inserts by itself; numInitialChunks applies to an empty collection "
                      "only (newer releases ignore it and start with one chunk per shard)";
  } else if (p.action != "shardCollection") {
    p.presplit = "none";
    p.presplit_note = p.action == "reshardCollection"
                          ? "resharding chooses the new chunks from the collection's data (numInitialChunks may set how many)"
                          : "refining keeps the current chunks; the balancer splits them on the new suffix";
  } else if (!allow_values) {
    p.presplit = "valuesNeeded";
    p.presplit_note = "split points are key values: enable evaluation.allow_values to have them computed from the observed "
                      "inserts (they stay inside the process otherwise)";
  } else {
    size_t sampled = 0;
    p.split_points_json = splitPoints(st, w.pattern, shards, sampled);
    p.presplit = "splitPoints";
    p.presplit_note = p.split_points_json.empty()
                          ? "too few sampled inserts (" + std::to_string(sampled) + ") for " + std::to_string(shards) +
                                " initial chunks"
                          : "quantiles of the full key over " + std::to_string(sampled) +
                                " sampled inserts: each initial chunk would have received about " + pct(1.0 / shards) +
                                " of them";
  }
  p.command_json += "}";

  // What to check first.
  if (p.action == "reshardCollection") {
    p.requirements.push_back("MongoDB 5.0 or later: before 5.0 a shard key cannot change (copy the data into a new "
                             "collection sharded on the new key instead)");
    p.requirements.push_back("free storage of at least 1.2x the collection's size (MongoDB 5.0-6.x), or per shard "
                             "(collection size + index size) x 2 / " + std::to_string(shards) +
                             " shards (current documentation); read the sizes with db." + coll + ".stats()");
    p.requirements.push_back("an oplog window of at least 24 hours; I/O below 50% and CPU below 80%; writes blocked for "
                             "up to 2 seconds at the commit; at least 5 minutes in all");
  } else if (p.action == "refineCollectionShardKey") {
    p.requirements.push_back("MongoDB 4.4 or later; the supporting index exists before the command");
  } else {
    if (w.pattern.size() > 1 && w.pattern.hasHashedField())
      p.requirements.push_back("MongoDB 4.4 or later: a compound shard key with a hashed field");
    p.requirements.push_back("the balancer then moves chunks between shards: allow for its traffic");
  }
  if (p.writes_per_second > 0) {
    p.requirements.push_back("observed: " + fixed(p.writes_per_second, 1) + " writes/s (inserts, updates, deletes) over " +
                             fixed(p.observed_seconds, 0) + " s, inserts adding " +
                             bytesText(p.inserted_bytes_per_second * 86400) + " per day" +
                             (p.action == "reshardCollection"
                                  ? "; each write during the operation is applied again to the new collection (catch-up), "
                                    "so the oplog must hold " + fixed(p.writes_per_second * 86400, 0) + "+ entries per day"
                                  : ""));
  } else {
    p.requirements.push_back("write rate unknown (observed for under a second)");
  }
  return p;
}

void writeMigrationPlanJson(common::JsonWriter& w, const MigrationPlan& p) {
  if (!p.present) {
    w.null();
    return;
  }
  w.beginObject();
  w.key("action").value(p.action);
  w.key("key").raw(p.key_json);
  if (p.command_json.empty()) w.key("command").null(); else w.key("command").raw(p.command_json);
  if (p.index_json.empty()) w.key("index").null(); else w.key("index").raw(p.index_json);
  w.key("indexNote").value(p.index_note);
  w.key("initialSplit").beginObject();
  w.key("method").value(p.presplit);
  w.key("splitPoints").beginArray();
  for (const auto& s : p.split_points_json) w.raw(s);
  w.endArray();
  if (p.initial_chunks) w.key("numInitialChunks").value(p.initial_chunks);
  w.key("note").value(p.presplit_note);
  w.endObject();
  w.key("observed").beginObject();
  w.key("seconds").value(p.observed_seconds);
  w.key("writesPerSecond").value(p.writes_per_second);
  w.key("insertedBytesPerSecond").value(p.inserted_bytes_per_second);
  w.key("avgDocBytes").value(p.avg_doc_bytes);
  w.endObject();
  w.key("requirements").beginArray();
  for (const auto& s : p.requirements) w.value(s);
  w.endArray();
  // singleOrMultiShardShare..., as /stats' targetedShare is another figure (oneShard of every sharded
  // op); each also under its earlier name ("targetedShare..."), kept for its readers (docs/evaluation.md).
  for (const char* name : {"singleOrMultiShardShareAfter", "targetedShareAfter"}) {
    w.key(name);
    if (p.targeted_known) w.value(p.targeted_share_after); else w.null();
  }
  for (const char* name : {"singleOrMultiShardShareNow", "targetedShareNow"}) {
    w.key(name);
    if (p.targeted_share_now >= 0) w.value(p.targeted_share_now); else w.null();
  }
  w.endObject();
}

std::string migrationPlanText(const MigrationPlan& p) {
  if (!p.present) return "";
  std::string t = "Migration plan (" + p.action + "):\n";
  if (p.action == "keep") return t + "  " + p.presplit_note + ".\n";
  const std::string db = p.ns.substr(0, p.ns.find('.'));
  if (!p.index_json.empty())
    t += "  index:    db.getSiblingDB(" + quoted(db) + ").runCommand(" + p.index_json + ")  -- " + p.index_note + "\n";
  else t += "  index:    " + p.index_note + "\n";
  t += "  command:  db.adminCommand(" + p.command_json + ")\n";
  if (p.presplit == "splitPoints" && !p.split_points_json.empty()) {
    t += "  split:    " + p.presplit_note + "\n";
    for (const auto& s : p.split_points_json) t += "            sh.splitAt(" + quoted(p.ns) + ", " + mongoshLiteral(s) + ")\n";
  } else {
    t += "  split:    " + p.presplit_note + "\n";
  }
  for (const auto& r : p.requirements) t += "  check:    " + r + "\n";
  if (!p.targeted_known) return t + "  expected: no read or write observed yet: the share targeted is not known\n";
  t += "  expected: " + pct(p.targeted_share_after) + " of reads and writes targeted" +
       (p.targeted_share_now >= 0 ? " (now " + pct(p.targeted_share_now) + ")" : "") + "\n";
  return t;
}

}  // namespace shardscope::evaluation
