#include "evaluation/namespace_state_fields.h"

#include <algorithm>
#include <string>
#include <tuple>
#include <vector>

#include "common/bson_order.h"
#include "evaluation/export_bson.h"
#include "evaluation/value_codec.h"

namespace shardscope::evaluation {

namespace {

void addCounts(std::vector<double>& into, const std::vector<double>& from) {
  if (into.size() < from.size()) into.resize(from.size(), 0);
  for (size_t i = 0; i < from.size(); ++i) into[i] += from[i];
}

bool lessEncoded(const std::string& a, const std::string& b) {
  bson_value_t va, vb;
  if (!decodeValue(a, va) || !decodeValue(b, vb)) return false;
  return common::compareValues(va, vb) < 0;
}


// The rows that are not plain counters.

void writeHll(bson_t* out, const char* name, const FieldState& f) {
  appendBin(out, name, {reinterpret_cast<const char*>(f.hll.registers().data()), f.hll.registers().size()});
}
bool readHll(const bson_t& in, const char* name, FieldState& f, const StateLimits&) {
  std::string hll = getBin(in, name);
  return f.hll.load(reinterpret_cast<const uint8_t*>(hll.data()), hll.size());
}

// "freq" also writes the summary's total and floor beside its counters.
void writeFreq(bson_t* out, const char* name, const FieldState& f) {
  bson_append_int64(out, "freqTotal", -1, static_cast<int64_t>(f.freq.total()));
  bson_append_int64(out, "freqFloor", -1, static_cast<int64_t>(f.freq.floor()));
  bson_t fa, fe;
  bson_append_array_begin(out, name, -1, &fa);
  for (size_t j = 0; j < f.freq.entries().size(); ++j) {
    const auto& e = f.freq.entries()[j];
    char idx[16];
    const char* k;
    bson_uint32_to_string(static_cast<uint32_t>(j), &k, idx, sizeof idx);
    bson_append_document_begin(&fa, k, -1, &fe);
    bson_append_int64(&fe, "h", -1, static_cast<int64_t>(e.hash));
    bson_append_int64(&fe, "c", -1, static_cast<int64_t>(e.count));
    bson_append_int64(&fe, "e", -1, static_cast<int64_t>(e.error));
    if (!e.label.empty()) appendName(&fe, "l", e.label);
    bson_append_document_end(&fa, &fe);
  }
  bson_append_array_end(out, &fa);
}
// Each counter keeps its error bound: a counter that replaced others ("c":47,"e":46) is known to
// hold one occurrence of its value, not 47.
bool readFreq(const bson_t& in, const char* name, FieldState& f, const StateLimits& limits) {
  bool ok = true;
  std::vector<SpaceSaving::Entry> counters;
  forEachDoc(in, name, [&](const bson_t& e) {
    int64_t c = getInt(e, "c"), err = getInt(e, "e");
    if (c < 0 || err < 0) ok = false;
    counters.push_back({static_cast<uint64_t>(getInt(e, "h")), static_cast<uint64_t>(std::max<int64_t>(c, 0)),
                        static_cast<uint64_t>(std::max<int64_t>(err, 0)), getString(e, "l")});
  });
  f.freq = SpaceSaving::fromCounters(limits.heavy_hitters, std::move(counters), static_cast<uint64_t>(getInt(in, "freqTotal")),
                                     static_cast<uint64_t>(std::max<int64_t>(getInt(in, "freqFloor"), 0)));
  return ok;
}
// The same counters (in any order: a summary rebuilt from its counters may order them anew).
bool sameFreq(const FieldState& a, const FieldState& b) {
  auto sorted = [](const SpaceSaving& s) {
    std::vector<std::tuple<uint64_t, uint64_t, uint64_t, std::string>> v;
    for (const auto& e : s.entries()) v.emplace_back(e.hash, e.count, e.error, e.label);
    std::sort(v.begin(), v.end());
    return v;
  };
  return a.freq.total() == b.freq.total() && a.freq.floor() == b.freq.floor() && sorted(a.freq) == sorted(b.freq);
}

void writeDistinct(bson_t* out, const char* name, const FieldState& f) {
  bson_t fa, fe;
  bson_append_array_begin(out, name, -1, &fa);
  size_t j = 0;
  for (const auto& [h, v] : f.distinct.values()) {
    char idx[16];
    const char* k;
    bson_uint32_to_string(static_cast<uint32_t>(j++), &k, idx, sizeof idx);
    bson_append_document_begin(&fa, k, -1, &fe);
    bson_append_int64(&fe, "h", -1, static_cast<int64_t>(h));
    appendBin(&fe, "v", v);
    bson_append_document_end(&fa, &fe);
  }
  bson_append_array_end(out, &fa);
}
bool readDistinct(const bson_t& in, const char* name, FieldState& f, const StateLimits&) {
  forEachDoc(in, name, [&](const bson_t& e) { f.distinct.add(getInt(e, "h"), getBin(e, "v")); });
  return true;
}

// An encoded value (max, min): binary in the export; the larger (max) or smaller (min) on merge.
template <std::string FieldState::*M, bool kKeepLarger>
FieldCodec boundCodec(const char* name) {
  return {name, nullptr, [](bson_t* out, const char* key, const FieldState& f) { appendBin(out, key, f.*M); },
          [](const bson_t& in, const char* key, FieldState& f, const StateLimits&) {
            f.*M = getBin(in, key);
            return true;
          },
          [](FieldState& into, const FieldState& from) {
            const std::string &mine = into.*M, &theirs = from.*M;
            if (mine.empty() || (!theirs.empty() && (kKeepLarger ? lessEncoded(mine, theirs) : lessEncoded(theirs, mine))))
              into.*M = theirs;
          },
          [](const FieldState& a, const FieldState& b) { return a.*M == b.*M; }};
}

// Inserts per simulated shard (ranged, hashed): an array of doubles, one per shard (any other
// length is malformed), added on merge.
template <std::vector<double> FieldState::*M>
FieldCodec shardCountsCodec(const char* name) {
  return {name, nullptr, [](bson_t* out, const char* key, const FieldState& f) { appendCounts(out, key, f.*M); },
          [](const bson_t& in, const char* key, FieldState& f, const StateLimits& limits) {
            f.*M = getCounts(in, key);
            return (f.*M).size() == limits.simulated_shards;
          },
          [](FieldState& into, const FieldState& from) { addCounts(into.*M, from.*M); },
          [](const FieldState& a, const FieldState& b) { return a.*M == b.*M; }};
}

// A plain counter: int64 in the export, summed on merge.
template <uint64_t FieldState::*M>
FieldCodec counterCodec(const char* name) {
  return {name, M,
          [](bson_t* out, const char* key, const FieldState& f) { bson_append_int64(out, key, -1, static_cast<int64_t>(f.*M)); },
          [](const bson_t& in, const char* key, FieldState& f, const StateLimits&) {
            f.*M = getInt(in, key);
            return true;
          },
          [](FieldState& into, const FieldState& from) { into.*M += from.*M; },
          [](const FieldState& a, const FieldState& b) { return a.*M == b.*M; }};
}

// Every exported member of a field, in the export's order (the `path` that names it comes first).
const std::vector<FieldCodec>& fieldTable() {
  static const std::vector<FieldCodec> table = {
      counterCodec<&FieldState::count>("count"),
      {"hll", nullptr, writeHll, readHll, [](FieldState& into, const FieldState& from) { into.hll.merge(from.hll); },
       [](const FieldState& a, const FieldState& b) { return a.hll.registers() == b.hll.registers(); }},
      {"freq", nullptr, writeFreq, readFreq, [](FieldState& into, const FieldState& from) { into.freq.merge(from.freq); },
       sameFreq},
      {"distinct", nullptr, writeDistinct, readDistinct,
       [](FieldState& into, const FieldState& from) { into.distinct.merge(from.distinct); },
       [](const FieldState& a, const FieldState& b) { return a.distinct.values() == b.distinct.values(); }},
      boundCodec<&FieldState::max, true>("max"),
      boundCodec<&FieldState::min, false>("min"),
      counterCodec<&FieldState::new_max>("newMax"),
      counterCodec<&FieldState::new_min>("newMin"),
      counterCodec<&FieldState::compared>("compared"),
      counterCodec<&FieldState::type_oid>("oid"),
      counterCodec<&FieldState::type_date>("date"),
      counterCodec<&FieldState::type_number>("number"),
      counterCodec<&FieldState::type_string>("string"),
      counterCodec<&FieldState::type_other>("other"),
      counterCodec<&FieldState::missing>("missing"),
      counterCodec<&FieldState::arrays>("arrays"),
      shardCountsCodec<&FieldState::ranged_shard_inserts>("ranged"),
      shardCountsCodec<&FieldState::hashed_shard_inserts>("hashed"),
  };
  return table;
}

constexpr NamespaceCounter kNamespaceCounters[] = {
    {"inserts", &NamespaceState::inserts},
    {"insertBytes", &NamespaceState::insert_bytes},
    {"reads", &NamespaceState::reads},
    {"writes", &NamespaceState::writes},
    {"otherShapeOps", &NamespaceState::other_shape_ops},
    {"upserted", &NamespaceState::upserted},
    {"upsertsMatched", &NamespaceState::upserts_matched},
    {"replacements", &NamespaceState::replacements},
};

}  // namespace

std::span<const NamespaceCounter> namespaceCounters() { return kNamespaceCounters; }
std::span<const FieldCodec> fieldCodecs() { return fieldTable(); }

}  // namespace shardscope::evaluation
