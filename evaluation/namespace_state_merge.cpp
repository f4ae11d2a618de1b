// A namespace's state between sidecars: the export (toBson), its import (mergeBson) and the merge
// of two states, all driven by one list of the exported members (namespace_state_fields.h).
#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "common/bson_order.h"
#include "common/command_fields.h"
#include "evaluation/namespace_state.h"
#include "evaluation/key_facts_from_samples.h"
#include "evaluation/namespace_state_fields.h"
#include "evaluation/export_bson.h"

namespace shardscope::evaluation {

void NamespaceState::toBson(bson_t* out) const {
  appendName(out, "ns", ns_);
  bson_append_int32(out, "shards", -1, static_cast<int32_t>(limits_.simulated_shards));
  for (const auto& c : namespaceCounters()) bson_append_int64(out, c.name, -1, static_cast<int64_t>(this->*c.member));
  bson_t arr, item;
  char idx[16];
  const char* k;
  bson_append_array_begin(out, "fields", -1, &arr);
  for (size_t i = 0; i < fields.size(); ++i) {
    const FieldState& f = fields[i];
    bson_uint32_to_string(static_cast<uint32_t>(i), &k, idx, sizeof idx);
    bson_append_document_begin(&arr, k, -1, &item);
    appendName(&item, "path", f.path);
    for (const auto& c : fieldCodecs()) c.write(&item, c.name, f);
    bson_append_document_end(&arr, &item);
  }
  bson_append_array_end(out, &arr);

  bson_append_int64(out, "reservoirSeen", -1, static_cast<int64_t>(reservoir_seen));
  {
    int64_t first = 0, last = 0;
    uint64_t count = 0;
    sampleSpan(first, last, count);
    bson_t span;
    bson_append_array_begin(out, "sampleSpan", -1, &span);
    bson_append_int64(&span, "0", -1, count ? first : 0);
    bson_append_int64(&span, "1", -1, count ? last : 0);
    bson_append_int64(&span, "2", -1, static_cast<int64_t>(count));
    bson_append_array_end(out, &span);
  }
  bson_append_array_begin(out, "reservoir", -1, &arr);
  for (size_t i = 0; i < reservoir.size(); ++i) {
    bson_uint32_to_string(static_cast<uint32_t>(i), &k, idx, sizeof idx);
    bson_append_document_begin(&arr, k, -1, &item);
    bson_append_int64(&item, "t", -1, reservoir[i].time_us);
    bson_append_int64(&item, "s", -1, static_cast<int64_t>(reservoir[i].seq));
    appendBin(&item, "d", reservoir[i].doc);
    bson_append_document_end(&arr, &item);
  }
  bson_append_array_end(out, &arr);

  bson_append_array_begin(out, "shapes", -1, &arr);
  size_t i = 0;
  for (const auto& [h, s] : shapes) {
    bson_uint32_to_string(static_cast<uint32_t>(i++), &k, idx, sizeof idx);
    bson_append_document_begin(&arr, k, -1, &item);
    bson_append_int64(&item, "h", -1, static_cast<int64_t>(h));
    appendName(&item, "shape", s.shape);
    bson_append_utf8(&item, "kind", -1, opKindName(s.kind), -1);
    bson_append_bool(&item, "multi", -1, s.multi);
    bson_append_bool(&item, "upsert", -1, s.upsert);
    bson_append_int64(&item, "count", -1, static_cast<int64_t>(s.count));
    bson_append_int64(&item, "commands", -1, static_cast<int64_t>(s.commands));
    bson_append_int64(&item, "offered", -1, static_cast<int64_t>(s.offered));
    bson_t sa;
    bson_append_array_begin(&item, "samples", -1, &sa);
    for (size_t j = 0; j < s.samples.size(); ++j) {
      char idx2[16];
      const char* k2;
      bson_uint32_to_string(static_cast<uint32_t>(j), &k2, idx2, sizeof idx2);
      appendBin(&sa, k2, s.samples[j]);
    }
    bson_append_array_end(&item, &sa);
    appendStrings(&item, "modified", s.modified);
    appendCounts(&item, "modifiedCounts", std::vector<double>(s.modified_counts.begin(), s.modified_counts.end()));
    appendStrings(&item, "sort", s.sort);
    FieldRoles roles = shapeRoles(s);
    appendStrings(&item, "eq", roles.eq);
    appendStrings(&item, "range", roles.range);
    bson_append_document_end(&arr, &item);
  }
  bson_append_array_end(out, &arr);
}

void NamespaceState::merge(const NamespaceState& o) {
  for (const auto& c : namespaceCounters()) this->*c.member += o.*c.member;
  for (const FieldState& of : o.fields) {
    if (!field(of.path) && fields.size() >= limits_.max_fields) continue;
    FieldState* tracked = trackField(of.path);
    if (!tracked) continue;
    FieldState& f = *tracked;
    for (const auto& c : fieldCodecs()) c.merge(f, of);
    f.splits = computeSplits(f.distinct, limits_.simulated_shards);
    f.decoded = DecodedBounds();  // max, min and splits changed
  }
  // Reservoirs: each side keeps a share proportional to what it saw, so the union stays uniform.
  uint64_t total = reservoir_seen + o.reservoir_seen;
  if (total > 0) {
    size_t cap = limits_.sample_size;
    size_t from_other = o.reservoir.size();
    size_t from_mine = reservoir.size();
    if (from_mine + from_other > cap) {
      from_other = static_cast<size_t>(static_cast<double>(cap) * o.reservoir_seen / total + 0.5);
      from_other = std::min(from_other, o.reservoir.size());
      from_mine = std::min(reservoir.size(), cap - from_other);
    }
    std::vector<SampleDoc> merged;
    auto pick = [&](const std::vector<SampleDoc>& src, size_t n) {
      std::vector<size_t> idx(src.size());
      for (size_t i = 0; i < idx.size(); ++i) idx[i] = i;
      for (size_t i = 0; i < n && i < idx.size(); ++i) std::swap(idx[i], idx[i + nextRandom() % (idx.size() - i)]);
      for (size_t i = 0; i < n && i < idx.size(); ++i) merged.push_back(src[idx[i]]);
    };
    pick(reservoir, from_mine);
    pick(o.reservoir, from_other);
    reservoir = std::move(merged);
    reservoir_seen = total;
  }
  fact_exports += o.fact_exports;
  for (const KeyFacts& of : o.imported_facts) {
    auto mine = std::find_if(imported_facts.begin(), imported_facts.end(), [&](const KeyFacts& k) { return k.key_json == of.key_json; });
    if (mine == imported_facts.end())
      imported_facts.push_back(of);
    else
      mine->merge(of);
  }
  imported_first_us = std::min(imported_first_us, o.imported_first_us);
  imported_last_us = std::max(imported_last_us, o.imported_last_us);
  imported_samples += o.imported_samples;
  for (const auto& [h, os] : o.shapes) {
    auto it = shapes.find(h);
    if (it == shapes.end()) {
      if (shapes.size() >= limits_.max_shapes) {
        other_shape_ops += os.count;
        continue;
      }
      shapes.emplace(h, os);
      continue;
    }
    ShapeState& s = it->second;
    s.count += os.count;
    s.commands += os.commands;
    s.offered += os.offered;
    for (const auto& f : os.samples)
      if (s.samples.size() < limits_.samples_per_shape) s.samples.push_back(f);
    for (size_t j = 0; j < os.modified.size(); ++j) {
      bool room = false;
      const size_t i = modifiedIndex(s, os.modified[j], room);
      if (i == s.modified.size()) {
        if (!room) continue;
        s.modified.push_back(os.modified[j].substr(0, kMaxFieldNameBytes));
        s.modified_counts.push_back(0);
      }
      s.modified_counts[i] += j < os.modified_counts.size() ? os.modified_counts[j] : 0;
    }
    for (const auto& e : os.eq_fields)
      if (std::find(s.eq_fields.begin(), s.eq_fields.end(), e) == s.eq_fields.end()) s.eq_fields.push_back(e);
    for (const auto& e : os.range_fields)
      if (std::find(s.range_fields.begin(), s.range_fields.end(), e) == s.range_fields.end()) s.range_fields.push_back(e);
  }
}

bool NamespaceState::mergeBson(const bson_t& doc, std::string& error) {
  NamespaceState o(getString(doc, "ns"), limits_);
  if (o.ns_ != ns_) {
    error = "namespace mismatch";
    return false;
  }
  int64_t shards = getInt(doc, "shards");
  if (shards != static_cast<int64_t>(limits_.simulated_shards)) {
    error = "sketches of " + ns_ + " were taken for " + std::to_string(shards) + " simulated shards, not " +
            std::to_string(limits_.simulated_shards);
    return false;
  }
  for (const auto& c : namespaceCounters()) o.*c.member = getInt(doc, c.name);
  bool ok = true;
  forEachDoc(doc, "fields", [&](const bson_t& fd) {
    std::string path = getString(fd, "path");
    if (path.empty() || o.field(path)) return;
    if (o.fields.size() >= limits_.max_fields) return;
    FieldState* tracked = o.trackField(path);
    if (!tracked) return;
    FieldState& f = *tracked;
    for (const auto& c : fieldCodecs())
      if (!c.read(fd, c.name, f, limits_)) ok = false;
  });
  o.reservoir_seen = getInt(doc, "reservoirSeen");
  forEachDoc(doc, "reservoir", [&](const bson_t& s) {
    if (o.reservoir.size() < limits_.sample_size)
      o.reservoir.push_back({getInt(s, "t"), static_cast<uint64_t>(getInt(s, "s")), getBin(s, "d")});
  });
  forEachDoc(doc, "shapes", [&](const bson_t& sd) {
    ShapeState s;
    s.shape = getString(sd, "shape");
    std::string kind = getString(sd, "kind");
    bool known = false;
    for (int k = 0; k <= static_cast<int>(OpKind::FindAndModify); ++k)
      if (kind == opKindName(static_cast<OpKind>(k))) {
        s.kind = static_cast<OpKind>(k);
        known = true;
      }
    if (!known) {
      ok = false;
      return;
    }
    bson_iter_t it;
    s.multi = bson_iter_init_find(&it, &sd, "multi") && bson_iter_as_bool(&it);
    s.upsert = bson_iter_init_find(&it, &sd, "upsert") && bson_iter_as_bool(&it);
    s.count = getInt(sd, "count");
    s.commands = getInt(sd, "commands");
    s.offered = getInt(sd, "offered");
    s.samples = getStrings(sd, "samples");
    if (s.samples.size() > limits_.samples_per_shape) s.samples.resize(limits_.samples_per_shape);
    s.modified = getStrings(sd, "modified");
    // Per name, the statements that named it; an export without them (an older sidecar) knew the
    // first statement's names only: taken as every statement's, as that sidecar judged them.
    const std::vector<double> counts = getCounts(sd, "modifiedCounts");
    for (size_t j = 0; j < s.modified.size(); ++j)
      s.modified_counts.push_back(j < counts.size() && counts.size() == s.modified.size() ? static_cast<uint64_t>(counts[j]) : s.count);
    s.sort = getStrings(sd, "sort");
    s.eq_fields = getStrings(sd, "eq");
    s.range_fields = getStrings(sd, "range");
    if (o.shapes.size() < limits_.max_shapes) o.shapes.emplace(static_cast<uint64_t>(getInt(sd, "h")), std::move(s));
  });
  // Facts of the candidate keys the sidecar evaluated (none from a version without them: its
  // candidates are then not evaluable, rather than guessed from what the export lacks).
  o.fact_exports = 1;
  forEachDoc(doc, "keyFacts", [&](const bson_t& kd) {
    KeyFacts k;
    if (!k.fromBson(kd)) {
      ok = false;
      return;
    }
    o.imported_facts.push_back(std::move(k));
  });
  {
    bson_iter_t it, span;
    if (bson_iter_init_find(&it, &doc, "sampleSpan") && BSON_ITER_HOLDS_ARRAY(&it) && bson_iter_recurse(&it, &span)) {
      int64_t v[3] = {0, 0, 0};
      for (int i = 0; i < 3 && bson_iter_next(&span); ++i) v[i] = bson_iter_as_int64(&span);
      if (v[2] > 0) o.imported_first_us = v[0], o.imported_last_us = v[1], o.imported_samples = static_cast<uint64_t>(v[2]);
    }
    // An export with the reservoir carries its span twice: count it once.
    if (!o.reservoir.empty()) o.imported_samples = 0, o.imported_first_us = INT64_MAX, o.imported_last_us = INT64_MIN;
  }
  if (!ok) {
    error = "malformed sketches for " + ns_;
    return false;
  }
  merge(o);
  return true;
}


}  // namespace shardscope::evaluation
