#include "evaluation/analysis.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <map>
#include <set>
#include <unordered_map>

#include "evaluation/value_codec.h"
#include "routing/bson_order.h"
#include "routing/chunk_map.h"
#include "routing/query_targeting.h"
#include "routing/routing_table.h"

namespace shardscope::evaluation {

namespace {

struct FieldRoles {
  std::vector<std::string> eq, range;
};

bool isOperatorDoc(const bson_iter_t& it) {
  if (!BSON_ITER_HOLDS_DOCUMENT(&it)) return false;
  bson_iter_t sub;
  bson_iter_recurse(&it, &sub);
  return bson_iter_next(&sub) && bson_iter_key(&sub)[0] == '$';
}

void addUnique(std::vector<std::string>& v, std::string s) {
  if (std::find(v.begin(), v.end(), s) == v.end()) v.push_back(std::move(s));
}

// Fields a filter pins by equality ({f: v}, $eq, $in) and fields it bounds by a range.
void collectRoles(const bson_t& filter, FieldRoles& roles, int depth = 0) {
  bson_iter_t it;
  if (depth > 8 || !bson_iter_init(&it, &filter)) return;
  while (bson_iter_next(&it)) {
    const char* key = bson_iter_key(&it);
    if (key[0] == '$') {
      if (std::strcmp(key, "$and") == 0 && BSON_ITER_HOLDS_ARRAY(&it)) {
        bson_iter_t arr;
        bson_iter_recurse(&it, &arr);
        while (bson_iter_next(&arr)) {
          if (!BSON_ITER_HOLDS_DOCUMENT(&arr)) continue;
          uint32_t len;
          const uint8_t* data;
          bson_iter_document(&arr, &len, &data);
          bson_t sub;
          if (bson_init_static(&sub, data, len)) collectRoles(sub, roles, depth + 1);
        }
      }
      continue;
    }
    if (!isOperatorDoc(it)) {
      if (!BSON_ITER_HOLDS_ARRAY(&it) && !BSON_ITER_HOLDS_REGEX(&it)) addUnique(roles.eq, key);
      continue;
    }
    bson_iter_t ops;
    bson_iter_recurse(&it, &ops);
    while (bson_iter_next(&ops)) {
      std::string_view op = bson_iter_key(&ops);
      if (op == "$eq" || op == "$in")
        addUnique(roles.eq, key);
      else if (op == "$gt" || op == "$gte" || op == "$lt" || op == "$lte")
        addUnique(roles.range, key);
    }
  }
}

bool staticDoc(std::string_view bytes, bson_t& out) {
  return bson_init_static(&out, reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size());
}

std::string patternJson(const std::vector<std::pair<std::string, bool>>& fields) {
  std::string s = "{";
  for (size_t i = 0; i < fields.size(); ++i) {
    if (i) s += ", ";
    s += "\"" + fields[i].first + "\": " + (fields[i].second ? "\"hashed\"" : "1");
  }
  return s + "}";
}

// The simulated cluster: one chunk per shard, split on the leading field (quantiles of its
// distinct values for a ranged field, even slices of the hash space for a hashed one).
bool buildCluster(const routing::ShardKeyPattern& pattern, const std::vector<std::string>& leading_splits,
                  uint32_t shards, routing::CollectionRouting& coll) {
  coll.key = pattern;
  coll.ns = "simulated";
  auto boundDoc = [&](int kind, const std::string* enc, int64_t hashed_split) {
    // kind: -1 all MinKey, +1 all MaxKey, 0 split on the leading field then MinKey
    bson_t d = BSON_INITIALIZER;
    for (size_t i = 0; i < pattern.size(); ++i) {
      const char* name = pattern.field(i).path.c_str();
      if (kind < 0 || (kind == 0 && i > 0)) {
        bson_append_minkey(&d, name, -1);
      } else if (kind > 0) {
        bson_append_maxkey(&d, name, -1);
      } else if (pattern.field(0).hashed) {
        bson_append_int64(&d, name, -1, hashed_split);
      } else {
        bson_value_t v;
        decodeValue(*enc, v);
        bson_append_value(&d, name, -1, &v);
      }
    }
    std::vector<uint8_t> bytes(bson_get_data(&d), bson_get_data(&d) + d.len);
    bson_destroy(&d);
    return bytes;
  };
  std::vector<std::vector<uint8_t>> bounds;
  bounds.push_back(boundDoc(-1, nullptr, 0));
  if (pattern.field(0).hashed) {
    for (uint32_t i = 1; i < shards; ++i) {
      double step = 18446744073709551616.0 / shards;
      int64_t split = static_cast<int64_t>(static_cast<double>(std::numeric_limits<int64_t>::min()) + step * i);
      bounds.push_back(boundDoc(0, nullptr, split));
    }
  } else {
    for (const auto& s : leading_splits) bounds.push_back(boundDoc(0, &s, 0));
  }
  bounds.push_back(boundDoc(1, nullptr, 0));
  std::vector<routing::ChunkInput> chunks;
  for (size_t i = 0; i + 1 < bounds.size(); ++i)
    chunks.push_back({bounds[i], bounds[i + 1], static_cast<uint16_t>(i % shards)});
  std::string error;
  return coll.chunks.build(pattern, std::move(chunks), error);
}

struct KeyedSample {
  int64_t time;
  uint64_t seq;
  uint64_t hash;
  std::string doc;
  routing::KeyPoint key;  // views into doc
};

double pearson(const std::vector<double>& x, const std::vector<double>& y) {
  size_t n = x.size();
  if (n < 3) return 0;
  double mx = 0, my = 0;
  for (size_t i = 0; i < n; ++i) mx += x[i], my += y[i];
  mx /= n, my /= n;
  double sxy = 0, sxx = 0, syy = 0;
  for (size_t i = 0; i < n; ++i) {
    sxy += (x[i] - mx) * (y[i] - my);
    sxx += (x[i] - mx) * (x[i] - mx);
    syy += (y[i] - my) * (y[i] - my);
  }
  return sxx > 0 && syy > 0 ? sxy / std::sqrt(sxx * syy) : 0;
}

std::string typeName(const FieldState& f) {
  uint64_t n = f.count ? f.count : 1;
  if (f.type_oid * 10 >= n * 9) return "ObjectId";
  if (f.type_date * 10 >= n * 9) return "date";
  if (f.type_number * 10 >= n * 9) return "number";
  if (f.type_string * 10 >= n * 9) return "string";
  return "mixed";
}

void evaluateCandidate(const NamespaceState& st, const AnalysisOptions& opt, CandidateResult& c) {
  const uint32_t N = opt.simulated_shards;
  const auto& lead = c.pattern.field(0);
  c.hashed_prefix = lead.hashed;
  const FieldState* lf = st.field(lead.path);

  // ---- the keyed reservoir ----
  std::vector<KeyedSample> samples;
  samples.reserve(st.reservoir.size());
  for (const auto& s : st.reservoir) {
    KeyedSample k{s.time_us, s.seq, 0, s.doc, {}};
    samples.push_back(std::move(k));
  }
  std::unordered_map<uint64_t, uint64_t> counts;
  std::vector<size_t> valid;
  for (size_t i = 0; i < samples.size(); ++i) {
    bson_t d;
    if (!staticDoc(samples[i].doc, d)) continue;
    if (c.pattern.extractFromDocument(d, samples[i].key) != routing::KeyExtractStatus::Ok) continue;
    uint64_t h = 0;
    for (size_t f = 0; f < samples[i].key.size; ++f) h = combineHash(h, valueHash(samples[i].key.fields[f].value));
    samples[i].hash = h;
    ++counts[h];
    valid.push_back(i);
  }
  const double n = static_cast<double>(valid.size());

  // ---- cardinality ----
  if (lf) c.prefix_cardinality = std::round(lf->hll.estimate());
  if (c.pattern.size() == 1 && lf) {
    c.cardinality = c.prefix_cardinality;
    c.cardinality_method = "HyperLogLog over every insert";
  } else if (n > 0) {
    double f1 = 0, rest = 0;
    for (const auto& [h, k] : counts) (k == 1 ? f1 : rest) += 1;
    double N_total = static_cast<double>(std::max<uint64_t>(st.reservoir_seen, valid.size()));
    c.cardinality = std::round(std::sqrt(N_total / n) * f1 + rest);  // GEE (Charikar et al.)
    c.cardinality = std::max(c.cardinality, c.prefix_cardinality);
    c.cardinality_method = "GEE estimate from " + std::to_string(valid.size()) + " sampled inserts";
  }

  // ---- frequency ----
  auto labelFor = [&](const SpaceSaving::Entry& e) { return opt.allow_values && !e.label.empty() ? e.label : hashLabel(e.hash); };
  if (lf && lf->freq.total() > 0) {
    auto top = lf->freq.top(5);
    double total = static_cast<double>(lf->freq.total());
    if (!top.empty()) {
      c.prefix_top_share = (top[0].count - top[0].error) / total;
      c.prefix_top_label = labelFor(top[0]);
    }
    if (c.pattern.size() == 1) {
      double sum = 0;
      for (const auto& e : top) {
        sum += (e.count - e.error) / total;
        c.top_values.push_back({labelFor(e), (e.count - e.error) / total});
      }
      c.top_share = c.prefix_top_share;
      c.top5_share = sum;
    }
  }
  if ((c.pattern.size() > 1 || !lf) && n > 0) {
    std::vector<uint64_t> ks;
    for (const auto& [h, k] : counts) ks.push_back(k);
    std::sort(ks.rbegin(), ks.rend());
    double sum = 0;
    for (size_t i = 0; i < ks.size() && i < 5; ++i) sum += ks[i] / n;
    c.top_share = ks.empty() ? 0 : ks[0] / n;
    c.top5_share = sum;
    std::vector<std::pair<uint64_t, uint64_t>> byCount(counts.begin(), counts.end());
    std::sort(byCount.begin(), byCount.end(), [](auto& a, auto& b) { return a.second != b.second ? a.second > b.second : a.first < b.first; });
    for (size_t i = 0; i < byCount.size() && i < 5; ++i) c.top_values.push_back({hashLabel(byCount[i].first), byCount[i].second / n});
    if (!lf) c.prefix_top_share = c.top_share;
  }

  // ---- monotonicity ----
  if (lf) c.leading_type = typeName(*lf);
  std::vector<size_t> order = valid;
  std::sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    return samples[a].time != samples[b].time ? samples[a].time < samples[b].time : samples[a].seq < samples[b].seq;
  });
  if (order.size() >= 3) {
    uint64_t extremes = 0;
    size_t mx = order[0], mn = order[0];
    for (size_t i = 1; i < order.size(); ++i) {
      auto k = samples[order[i]].key.span();
      if (routing::compareKeys(k, samples[mx].key.span()) > 0) {
        ++extremes;
        mx = order[i];
      } else if (routing::compareKeys(k, samples[mn].key.span()) < 0) {
        ++extremes;
        mn = order[i];
      }
    }
    c.new_extreme_share = static_cast<double>(extremes) / (order.size() - 1);
    std::vector<size_t> byKey = order;
    std::stable_sort(byKey.begin(), byKey.end(), [&](size_t a, size_t b) {
      return routing::compareKeys(samples[a].key.span(), samples[b].key.span()) < 0;
    });
    std::unordered_map<size_t, double> keyRank;
    for (size_t i = 0; i < byKey.size();) {  // ties share their average rank
      size_t j = i;
      while (j + 1 < byKey.size() &&
             routing::compareKeys(samples[byKey[j + 1]].key.span(), samples[byKey[i]].key.span()) == 0)
        ++j;
      for (size_t t = i; t <= j; ++t) keyRank[byKey[t]] = (i + j) / 2.0;
      i = j + 1;
    }
    std::vector<double> x, y;
    for (size_t i = 0; i < order.size(); ++i) {
      x.push_back(static_cast<double>(i));
      y.push_back(keyRank[order[i]]);
    }
    c.rank_correlation = pearson(x, y);
  }
  if (c.pattern.size() == 1 && lf && lf->compared > 0)
    c.new_extreme_share = static_cast<double>(lf->new_max + lf->new_min) / lf->compared;
  c.monotonic = !lead.hashed && (std::fabs(c.rank_correlation) >= opt.monotonic_correlation || c.new_extreme_share >= 0.5);

  // ---- simulated cluster: inserts per shard ----
  std::vector<double> per(N, 0);
  if (lf) {
    const auto& src = lead.hashed ? lf->hashed_shard_inserts : lf->ranged_shard_inserts;
    for (size_t i = 0; i < src.size() && i < N; ++i) per[i] = src[i];
  } else {
    for (size_t i : valid) {
      const auto& b = samples[i].key.fields[0];
      if (lead.hashed)
        ++per[NamespaceState::hashedShard(static_cast<uint64_t>(b.value.value.v_int64), N)];
      else
        ++per[0];
    }
  }
  double sim_total = 0;
  for (double v : per) sim_total += v;
  c.simulated_inserts = static_cast<uint64_t>(std::llround(sim_total));
  if (sim_total > 0) {
    double mx = *std::max_element(per.begin(), per.end()), mn = *std::min_element(per.begin(), per.end());
    for (double v : per) c.shard_insert_share.push_back(v / sim_total);
    // A shard with under 0.1% of the inserts counts as none (max/min infinite).
    c.max_min_ratio = mn < 0.001 * sim_total ? 0 : mx / mn;
  }

  // ---- reads and writes, per shape, on the simulated cluster ----
  routing::CollectionRouting coll;
  std::vector<std::string> splits;
  if (lf && !lead.hashed) splits = NamespaceState::computeSplits(lf->distinct, N);
  bool cluster = buildCluster(c.pattern, splits, N, coll);
  double reads = 0, writes = 0, rs = 0, rm = 0, rsc = 0, ws = 0, wm = 0, wsc = 0, rshards = 0, tshards = 0, tcount = 0;
  double single_wo = 0, multi_wo = 0, key_upd = 0;
  for (const auto& [h, s] : st.shapes) {
    ShapeOutcome o;
    o.shape = s.shape;
    o.kind = s.kind;
    o.count = s.count;
    size_t used = 0, tn = 0;
    double tsum = 0;
    for (const auto& fbytes : s.samples) {
      bson_t f;
      if (!cluster || !staticDoc(fbytes, f)) continue;
      routing::FilterTarget ft;
      routing::TargetOptions to;
      routing::targetFilter(coll, f, true, to, ft, nullptr);
      ++used;
      if (ft.full_key)
        o.single += 1;
      else if (ft.targeting == routing::Targeting::Broadcast)
        o.scatter += 1;
      else
        o.multi += 1;
      o.shards += static_cast<double>(ft.shards.count());
      if (ft.targeting != routing::Targeting::Broadcast) tsum += static_cast<double>(ft.shards.count()), ++tn;
    }
    if (tn) o.targeted_shards = tsum / tn;
    if (used == 0) {  // no sample: an unfiltered or unsampled op counts as scatter-gather
      o.scatter = 1;
      o.shards = N;
    } else {
      o.sampled = true;
      o.single /= used, o.multi /= used, o.scatter /= used, o.shards /= used;
    }
    o.without_key = !isRead(s.kind) && o.single < 0.5;
    for (const auto& m : s.modified) {
      for (const auto& kf : c.pattern.fields()) {
        if (m.empty() || m == kf.path || kf.path.rfind(m + ".", 0) == 0 || m.rfind(kf.path + ".", 0) == 0)
          o.key_update = true;
      }
    }
    double w = static_cast<double>(s.count);
    if (isRead(s.kind)) {
      reads += w;
      rs += w * o.single, rm += w * o.multi, rsc += w * o.scatter, rshards += w * o.shards;
      if (o.scatter < 1) {
        tshards += w * (1 - o.scatter) * o.targeted_shards;
        tcount += w * (1 - o.scatter);
      }
    } else {
      writes += w;
      ws += w * o.single, wm += w * o.multi, wsc += w * o.scatter;
      if (o.without_key) (s.multi ? multi_wo : single_wo) += w;
      if (o.key_update) key_upd += w;
    }
    c.shapes.push_back(std::move(o));
  }
  std::sort(c.shapes.begin(), c.shapes.end(), [](const ShapeOutcome& a, const ShapeOutcome& b) {
    return a.count != b.count ? a.count > b.count : a.shape < b.shape;
  });
  if (reads > 0) {
    c.read_single = rs / reads, c.read_multi = rm / reads, c.read_scatter = rsc / reads;
    c.read_shards = rshards / reads;
  }
  if (tcount > 0) c.targeted_read_shards = tshards / tcount;
  if (writes > 0) {
    c.write_single = ws / writes, c.write_multi = wm / writes, c.write_scatter = wsc / writes;
    c.single_writes_without_key = single_wo / writes;
    c.multi_writes_without_key = multi_wo / writes;
    c.shard_key_updates = key_upd / writes;
  }
  double all = reads + writes + static_cast<double>(st.other_shape_ops);
  if (all > 0) {
    c.targeted = (reads + writes - rsc - wsc) / all;
    c.single_overall = (rs + ws) / all;
  }

  // ---- the three properties ----
  double min_card = static_cast<double>(opt.min_distinct_per_shard) * N;
  if (c.cardinality < min_card) {
    c.pass_cardinality = false;
    c.failures.push_back("cardinality");
  }
  double fair = 1.0 / N;
  if (c.top_share >= fair || (c.pattern.size() > 1 && c.prefix_top_share >= fair)) {
    c.pass_frequency = false;
    c.failures.push_back("frequency");
  }
  if (c.monotonic) {
    c.pass_monotonicity = false;
    c.failures.push_back("monotonicity");
  }
  if (c.top_share >= opt.jumbo_warn_share) {
    c.jumbo_risk = true;
    c.jumbo_at_bytes = opt.chunk_size_bytes / c.top_share;
    c.warnings.push_back("jumbo");
  }
  if (!c.monotonic && c.simulated_inserts > 0 && (c.max_min_ratio == 0 || c.max_min_ratio >= opt.imbalance_warn_ratio))
    c.warnings.push_back("imbalance");
}

}  // namespace

std::string keyLabel(const routing::ShardKeyPattern& p) {
  std::string s = "{";
  for (size_t i = 0; i < p.size(); ++i) {
    if (i) s += ", ";
    s += p.field(i).path + ": " + (p.field(i).hashed ? "\"hashed\"" : "1");
  }
  return s + "}";
}

NamespaceReport analyzeNamespace(const NamespaceState& st, const AnalysisOptions& opt,
                                 const routing::ShardKeyPattern* current_key,
                                 const std::vector<std::string>& configured_keys) {
  NamespaceReport r;
  r.ns = st.ns();
  r.shards = opt.simulated_shards;
  r.reads = st.reads;
  r.writes = st.writes;
  r.inserts = st.inserts;
  r.other_shape_ops = st.other_shape_ops;
  r.avg_doc_bytes = st.inserts ? static_cast<double>(st.insert_bytes) / st.inserts : 0;
  r.memory_bytes = st.memoryBytes();

  // ---- candidates ----
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
  std::vector<std::pair<std::string, std::string>> singles, hashes, compounds, hcompounds, ranges;
  for (size_t i = 0; i < byCount.size() && i < 12; ++i) {
    const ShapeState& s = *byCount[i];
    FieldRoles roles;
    for (const auto& f : s.samples) {
      bson_t d;
      if (staticDoc(f, d)) collectRoles(d, roles);
    }
    std::vector<std::string> rangeish = roles.range;
    for (const auto& sf : s.sort) addUnique(rangeish, sf);
    for (const auto& e : roles.eq) {
      singles.push_back({patternJson({{e, false}}), "traffic"});
      hashes.push_back({patternJson({{e, true}}), "traffic"});
      for (const auto& rf : rangeish) {
        if (rf == e) continue;
        compounds.push_back({patternJson({{e, false}, {rf, false}}), "traffic"});
        hcompounds.push_back({patternJson({{e, true}, {rf, false}}), "traffic"});
      }
    }
    for (const auto& rf : roles.range) ranges.push_back({patternJson({{rf, false}}), "traffic"});
  }
  // Interleave so the cap keeps the dominant shapes' variants first.
  for (auto* group : {&singles, &compounds, &hashes, &hcompounds, &ranges})
    for (auto& w : *group) wanted.push_back(w);

  std::map<std::string, size_t> seen;
  for (const auto& [json, source] : wanted) {
    std::string error;
    auto p = routing::ShardKeyPattern::fromJson(json, error);
    if (!p) continue;
    std::string canon = p->toJson();
    auto it = seen.find(canon);
    if (it != seen.end()) {
      auto& srcs = r.candidates[it->second].sources;
      if (std::find(srcs.begin(), srcs.end(), source) == srcs.end()) srcs.push_back(source);
      continue;
    }
    if (r.candidates.size() >= opt.max_candidates) continue;
    CandidateResult c;
    c.pattern = *p;
    c.key_json = canon;
    c.label = keyLabel(*p);
    c.sources.push_back(source);
    seen.emplace(canon, r.candidates.size());
    r.candidates.push_back(std::move(c));
  }
  for (auto& c : r.candidates) evaluateCandidate(st, opt, c);

  // Shapes, without targeting (from the first candidate's outcome list, which has all shapes).
  if (!r.candidates.empty()) r.shapes = r.candidates.front().shapes;

  // ---- ranking: pass all three properties, then the share of traffic targeted ----
  auto card = [](const CandidateResult& c) { return c.cardinality; };
  std::stable_sort(r.candidates.begin(), r.candidates.end(), [&](const CandidateResult& a, const CandidateResult& b) {
    if (a.passes() != b.passes()) return a.passes();
    if (!a.passes() && a.failures.size() != b.failures.size()) return a.failures.size() < b.failures.size();
    if (std::fabs(a.targeted - b.targeted) > 0.005) return a.targeted > b.targeted;
    if (a.warnings.size() != b.warnings.size()) return a.warnings.size() < b.warnings.size();
    if (a.hashed_prefix != b.hashed_prefix) return !a.hashed_prefix;  // keep locality unless hashing buys something
    if (std::fabs(card(a) - card(b)) > 0.1 * std::max(card(a), card(b))) return card(a) > card(b);
    if (std::fabs(a.single_overall - b.single_overall) > 0.005) return a.single_overall > b.single_overall;
    return a.pattern.size() < b.pattern.size();
  });
  if (!r.candidates.empty() && (st.reads + st.writes + st.inserts) > 0) {
    r.recommended = 0;
    r.recommended_passes = r.candidates[0].passes();
  }
  return r;
}

}  // namespace shardscope::evaluation
