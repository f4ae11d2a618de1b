#include "evaluation/namespace_state.h"
#include "evaluation/key_facts_from_samples.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>
#include <random>

#include "evaluation/document_digest.h"
#include "evaluation/projection.h"
#include "evaluation/value_codec.h"
#include "common/bson_order.h"
#include "common/command_fields.h"

namespace shardscope::evaluation {

namespace {

const bson_value_t kNull = [] {
  bson_value_t v{};
  v.value_type = BSON_TYPE_NULL;
  return v;
}();

// "a\0b\0" -> {"a", "b"}: the NUL-terminated names of an OpRecord (each at most kMaxFieldNameBytes).
std::vector<std::string> splitNames(std::string_view names) {
  std::vector<std::string> out;
  for (size_t start = 0, end; (end = names.find('\0', start)) != std::string_view::npos; start = end + 1)
    out.emplace_back(names.substr(start, std::min(end - start, kMaxFieldNameBytes)));
  return out;
}

// Heap bytes behind a string (none while it fits the small-string buffer), with malloc's header.
size_t heapBytes(const std::string& s) { return s.capacity() > 15 ? s.capacity() + 1 + 16 : 0; }

template <typename T>
size_t vectorBytes(const std::vector<T>& v) {
  return v.capacity() ? v.capacity() * sizeof(T) + 16 : 0;
}

size_t stringsBytes(const std::vector<std::string>& v) {
  size_t n = vectorBytes(v);
  for (const auto& s : v) n += heapBytes(s);
  return n;
}

// What one tracked field can grow to with values bounded by kMaxKeptValueBytes: charged when it
// starts being tracked, so the budget holds whatever values arrive later.
size_t fieldBoundBytes(const StateLimits& l) {
  const size_t kept = kMaxKeptValueBytes + 1 + 16;
  return sizeof(FieldState) + (size_t{1} << HyperLogLog::kPrecision) +
         l.heavy_hitters * (sizeof(SpaceSaving::Entry) + 64 + 16) + 4 * l.heavy_hitters * sizeof(uint32_t) +
         l.distinct_sample * (sizeof(std::pair<uint64_t, std::string>) * 2 + kept) + (l.simulated_shards + 1) * (32 + kept) +
         2 * kept + l.simulated_shards * (2 * sizeof(double) + sizeof(bson_value_t)) + 2 * kMaxFieldNameBytes + 256;
}

// A replaced sample keeps its string's memory only when the new one is not much smaller.
void assignSample(std::string& slot, std::string_view bytes) {
  if (slot.capacity() > 1024 && bytes.size() < slot.capacity() / 4) std::string().swap(slot);
  slot.assign(bytes);
}

}  // namespace

const char* opKindName(OpKind k) {
  switch (k) {
    case OpKind::Find: return "find";
    case OpKind::Aggregate: return "aggregate";
    case OpKind::Count: return "count";
    case OpKind::Distinct: return "distinct";
    case OpKind::Update: return "update";
    case OpKind::Delete: return "delete";
    case OpKind::FindAndModify: return "findAndModify";
  }
  return "?";
}

NamespaceState::NamespaceState(std::string ns, const StateLimits& limits) : ns_(std::move(ns)), limits_(limits) {
  charge_.attach(limits_.shared_budget, limits_.max_bytes);
}

const FieldState* NamespaceState::field(std::string_view path) const {
  size_t i = fieldIndex(path, kUntracked);
  return i == kUntracked ? nullptr : &fields[i];
}

size_t NamespaceState::indexedField(std::string_view path) const {
  auto it = field_index_.find(path);
  return it == field_index_.end() ? kUntracked : it->second;
}

FieldState* NamespaceState::trackField(std::string_view path) {
  auto it = field_index_.find(path);
  if (it != field_index_.end()) return &fields[it->second];
  if (path.size() > kMaxFieldNameBytes || !charge_.take(fieldBoundBytes(limits_))) {
    ++dropped_for_memory;
    return nullptr;
  }
  field_index_.emplace(std::string(path), fields.size());
  FieldState f;
  f.path = std::string(path);
  f.freq = SpaceSaving(limits_.heavy_hitters);
  f.distinct = BottomK(limits_.distinct_sample);
  f.ranged_shard_inserts.assign(limits_.simulated_shards, 0);
  f.hashed_shard_inserts.assign(limits_.simulated_shards, 0);
  fields.push_back(std::move(f));
  return &fields.back();
}

std::vector<std::string> NamespaceState::computeSplits(const BottomK& distinct, uint32_t shards) {
  std::vector<std::string> splits;
  DecodedValues order;
  computeSplits(distinct, shards, splits, order);
  return splits;
}

void NamespaceState::computeSplits(const BottomK& distinct, uint32_t shards, std::vector<std::string>& splits,
                                   DecodedValues& order) {
  // Decode once, sort views, then copy out only the split values.
  order.clear();
  for (const auto& [h, v] : distinct.values()) {
    bson_value_t dv;
    if (decodeValue(v, dv)) order.push_back({dv, &v});
  }
  std::sort(order.begin(), order.end(),
            [](const auto& a, const auto& b) { return compareKept(a.first, b.first) < 0; });
  size_t n = 0;
  if (order.size() >= 2 && shards >= 2) {
    const bson_value_t* last = &order.front().first;  // a split at the minimum adds nothing
    for (uint32_t i = 1; i < shards; ++i) {
      const auto& s = order[order.size() * i / shards];
      if (compareKept(*last, s.first) >= 0) continue;  // duplicates: fewer chunks
      if (n < splits.size())
        splits[n].assign(*s.second);
      else
        splits.push_back(*s.second);
      ++n;
      last = &s.first;
    }
  }
  splits.resize(n);
}

uint32_t NamespaceState::rangedShard(const std::vector<bson_value_t>& splits, const bson_value_t& v) {
  uint32_t lo = 0, hi = static_cast<uint32_t>(splits.size());
  while (lo < hi) {  // first split > v
    uint32_t mid = (lo + hi) / 2;
    if (compareKept(splits[mid], v) <= 0)
      lo = mid + 1;
    else
      hi = mid;
  }
  return lo;
}

uint32_t NamespaceState::hashedShard(uint64_t value_hash, uint32_t shards) {
  uint64_t h = mix64(value_hash) >> 32;
  return static_cast<uint32_t>((h * shards) >> 32);
}

namespace {

void decodeSplits(FieldState& f) {
  f.decoded.splits.resize(f.splits.size());
  for (size_t i = 0; i < f.splits.size(); ++i) decodeValue(f.splits[i], f.decoded.splits[i]);
}

void decodeBounds(FieldState& f) {
  if (!f.max.empty()) decodeValue(f.max, f.decoded.max);
  if (!f.min.empty()) decodeValue(f.min, f.decoded.min);
  decodeSplits(f);
  f.decoded.valid = true;
}

}  // namespace

void NamespaceState::observeField(FieldState& f, const bson_value_t& v, uint64_t h, bool whole) {
  ++f.count;
  f.hll.add(h);
  if (limits_.allow_values && !f.freq.contains(h)) {  // a label is kept only by a new counter
    std::string label = displayValue(v);
    f.freq.add(h, 1, &label);
  } else {
    f.freq.add(h, 1, nullptr);
  }
  switch (v.value_type) {
    case BSON_TYPE_OID: ++f.type_oid; break;
    case BSON_TYPE_DATE_TIME:
    case BSON_TYPE_TIMESTAMP: ++f.type_date; break;
    case BSON_TYPE_INT32:
    case BSON_TYPE_INT64:
    case BSON_TYPE_DOUBLE:
    case BSON_TYPE_DECIMAL128: ++f.type_number; break;
    case BSON_TYPE_UTF8: ++f.type_string; break;
    default: ++f.type_other; break;
  }
  // The ordered samples keep values bounded in bytes (encodeKeptValue): a long string as its
  // prefix, compared as its prefix; a large value of another type is left out of them.
  // A digest's cut value is kept as its whole would be: a string by its prefix (shorter than the
  // cut), anything else of that size not at all.
  int kept = whole || v.value_type == BSON_TYPE_UTF8 ? -1 : 0;  // -1: unknown yet, encoded only when needed
  bson_value_t kv;
  auto keep = [&]() {
    if (kept < 0) kept = encodeKeptValue(v, encoded_) && decodeValue(encoded_, kv) ? 1 : 0;
    return kept == 1;
  };
  if (f.distinct.mayTake(h) && keep()) f.distinct.add(h, encoded_);

  // Monotonicity: is this value a new maximum or minimum of everything seen before it? Compared
  // as it is kept (a small value as itself, without encoding it).
  const bson_value_t* compared = whole && keptWhole(v) ? &v : keep() ? &kv : nullptr;
  DecodedBounds& d = f.decoded;
  if (!d.valid) decodeBounds(f);
  if (!compared) {
    // left out of the ordered samples
  } else if (f.max.empty()) {
    keep();
    f.max = f.min = encoded_;
    decodeValue(f.max, d.max);
    decodeValue(f.min, d.min);
  } else {
    ++f.compared;
    if (compareKept(*compared, d.max) > 0) {
      keep();
      ++f.new_max;
      f.max = encoded_;
      decodeValue(f.max, d.max);
    } else if (compareKept(*compared, d.min) < 0) {
      keep();
      ++f.new_min;
      f.min = encoded_;
      decodeValue(f.min, d.min);
    }
  }

  // Simulated cluster: split points are re-derived every `resplit_every` inserts, as a balancer
  // that keeps splitting at the quantiles of the values seen so far would.
  if (++f.since_split >= limits_.resplit_every || (f.splits.empty() && f.since_split >= limits_.resplit_every / 2)) {
    if (f.splits_of != f.distinct.version()) {  // else the same sample gives the same splits
      computeSplits(f.distinct, limits_.simulated_shards, f.splits, split_order_);
      f.splits_of = f.distinct.version();
      decodeSplits(f);
    }
    f.since_split = 0;
    for (auto& c : f.ranged_shard_inserts) c *= kShardCountDecay;
    for (auto& c : f.hashed_shard_inserts) c *= kShardCountDecay;
    if (f.splits.empty()) f.splits.reserve(1);  // capacity marks "warm-up over" even for one value
  }
  if (f.splits.capacity() > 0) {
    // Chunks are numbered from the top: the chunk ending at MaxKey is always on the last shard,
    // as it stays on one shard in a real cluster while the balancer moves the others.
    uint32_t chunk = rangedShard(d.splits, v);
    uint32_t from_top = static_cast<uint32_t>(f.splits.size()) - chunk;
    ++f.ranged_shard_inserts[limits_.simulated_shards - 1 - std::min(from_top, limits_.simulated_shards - 1)];
    ++f.hashed_shard_inserts[hashedShard(h, limits_.simulated_shards)];
  }
}

bool NamespaceState::mayTrack(std::string_view path) const {
  if (fields.size() < limits_.max_fields) return true;
  return std::find(limits_.kept_fields.begin(), limits_.kept_fields.end(), path) != limits_.kept_fields.end();
}

void NamespaceState::observePath(std::string_view path, const bson_iter_t& it, size_t position, const uint64_t* hash,
                                 bool whole) {
  if (path == "_id") lacks_id_ = false;
  FieldState* f = nullptr;
  if (size_t i = fieldIndex(path, position); i != kUntracked) {
    f = &fields[i];
    seen_[i] = 1;
  } else if (mayTrack(path)) {
    if ((f = trackField(path))) seen_.push_back(1);
  }
  if (!f) return;
  if (bson_iter_type_unsafe(&it) == BSON_TYPE_ARRAY) {  // not a valid shard key value; count as missing
    ++f->missing;
    ++f->arrays;
    return;
  }
  bson_value_t scratch;
  const bson_value_t& v = elementValue(it, scratch);
  observeField(*f, v, hash ? *hash : valueHash(v), whole);
}

void NamespaceState::countInsert(uint64_t bytes, DocOrigin origin) {
  if (origin == DocOrigin::Replaced) {
    ++replacements;
  } else {
    ++inserts;
    insert_bytes += bytes;
    if (origin == DocOrigin::Upserted) ++upserted;
  }
  seen_.assign(fields.size(), 0);
  lacks_id_ = origin == DocOrigin::Insert;  // an upsert's _id comes with its reply, a replacement keeps one
}

void NamespaceState::observeServerId(bson_oid_t& oid) {
  // 5 bytes drawn once per process (sidecars make distinct ids), then a counter: unique, rising
  // with arrival as the server's ObjectIds do, and the same for the same inserts (an export does
  // not depend on when or how they were batched).
  static const uint64_t self = std::random_device{}() * 0x9E3779B97F4A7C15ull;
  const uint64_t count = server_ids_++;
  for (int i = 0; i < 5; ++i) oid.bytes[i] = static_cast<uint8_t>(self >> (8 * i));
  for (int i = 0; i < 7; ++i) oid.bytes[5 + i] = static_cast<uint8_t>(count >> (48 - 8 * i));
  bson_value_t v;
  v.value_type = BSON_TYPE_OID;
  bson_oid_copy(&oid, &v.value.v_oid);
  FieldState* f = nullptr;
  if (size_t i = fieldIndex("_id", 0); i != kUntracked) {
    f = &fields[i];
    seen_[i] = 1;
  } else if (mayTrack("_id")) {
    if ((f = trackField("_id"))) seen_.push_back(1);
  }
  if (f) observeField(*f, v, valueHash(v));
}

void NamespaceState::applyInsert(const bson_t& doc, int64_t time_us, DocOrigin origin) {
  countInsert(doc.len, origin);
  // Top-level fields first, so that those are tracked first; then dotted paths (DocumentWalk).
  walk_.run(doc, kEveryTopLevelField, [&](std::string_view path, const bson_iter_t& it, size_t position) { observePath(path, it, position); });
  finishInsert(time_us, &doc, {});
}

void NamespaceState::applyDigest(const DigestView& digest, int64_t time_us, DocOrigin origin) {
  countInsert(digest.size, origin);
  bson_iter_t it;
  if (bson_iter_init(&it, &digest.fields)) {
    std::string_view key;
    for (uint32_t i = 0; i < digest.count && nextField(it, key); ++i) {
      const uint64_t hash = digest.hash(i);
      observePath(key, it, i, &hash, digest.whole(i));
    }
  }
  finishInsert(time_us, nullptr, digest.projection);
}

// The fields the document did not have, and the reservoir: `doc` projected, or its `projection`.
void NamespaceState::finishInsert(int64_t time_us, const bson_t* doc, std::string_view projection) {
  bson_oid_t server_id;
  const bool made_id = lacks_id_;
  if (made_id) observeServerId(server_id);
  for (size_t i = 0; i < fields.size(); ++i) {
    if (i < seen_.size() && seen_[i]) continue;
    ++fields[i].missing;
    observeField(fields[i], kNull, valueHash(kNull));  // a missing shard-key field counts as null
  }

  // Reservoir of projected documents, in arrival order (for compound keys and monotonicity).
  ++reservoir_seen;
  int64_t slot;
  if (reservoir_seen <= limits_.sample_size) {
    slot = static_cast<int64_t>(reservoir.size());
  } else {
    uint64_t j = nextRandom() % reservoir_seen;
    slot = j < limits_.sample_size ? static_cast<int64_t>(j) : -1;
  }
  if (slot < 0) return;
  if (doc) projectSmallFields(*doc, projected_);  // at most 2 KiB
  else projected_.assign(projection);
  if (made_id && projected_.size() >= 5) {  // the sample holds the _id the server gave it, first as it would
    char element[17] = {BSON_TYPE_OID, '_', 'i', 'd', '\0'};
    std::memcpy(element + 5, server_id.bytes, 12);
    projected_.insert(4, element, sizeof element);
    const uint32_t len = static_cast<uint32_t>(projected_.size());
    for (int i = 0; i < 4; ++i) projected_[i] = static_cast<char>(len >> (8 * i));  // little-endian
  }
  const bool append = slot == static_cast<int64_t>(reservoir.size());
  const size_t extra = append ? sizeof(SampleDoc) : 0;
  const size_t before = append ? 0 : heapBytes(reservoir[slot].doc);
  const size_t need = (projected_.size() > 15 ? std::bit_ceil(projected_.size()) + 1 + 16 : 0) + extra;
  if (need > before && !charge_.take(need - before)) {
    ++dropped_for_memory;
    return;
  }
  SampleDoc& s = append ? reservoir.emplace_back() : reservoir[slot];
  s.time_us = time_us;
  s.seq = reservoir_seen;
  // Into the replaced sample's memory, grown to a power of two: slots settle at one capacity
  // although documents differ by a few bytes (no allocation once warm).
  if (s.doc.capacity() < projected_.size()) s.doc.reserve(std::bit_ceil(projected_.size()));
  s.doc.assign(projected_);
  charge_.settle(std::max(need, before), heapBytes(s.doc) + extra);
}

void NamespaceState::evictLeastCountedShape() {
  // One pass over at most max_shapes rows, only when a new shape meets a full table: shapes one
  // client made up first (each seen once) cannot keep the workload's own shapes out; they push
  // each other out, and a shape the workload repeats keeps its row.
  auto victim = shapes.end();
  for (auto it = shapes.begin(); it != shapes.end(); ++it)
    if (victim == shapes.end() || it->second.count < victim->second.count) victim = it;
  if (victim == shapes.end()) return;
  const ShapeState& s = victim->second;
  // What applyOp and mergeModified charged for it (the same sums, from what it holds now).
  size_t bytes = sizeof(std::pair<const uint64_t, ShapeState>) + 32 + heapBytes(s.shape) + stringsBytes(s.sort) +
                 limits_.samples_per_shape * sizeof(std::string);
  for (const auto& sample : s.samples) bytes += heapBytes(sample);
  for (const auto& name : s.modified) bytes += sizeof(std::string) + sizeof(uint64_t) + heapBytes(name);
  other_shape_ops += s.count;
  shapes.erase(victim);
  charge_.give(bytes);
}

void NamespaceState::applyOp(const OpRecord& op) {
  (isRead(op.kind) ? reads : writes) += op.count;
  auto it = shapes.find(op.shape_hash);
  if (it == shapes.end()) {
    ShapeState s;
    s.shape = std::string(op.shape.substr(0, kMaxShapeTextBytes));
    s.sort = splitNames(op.sort);
    const size_t bytes = sizeof(std::pair<const uint64_t, ShapeState>) + 32 + heapBytes(s.shape) + stringsBytes(s.sort) +
                         limits_.samples_per_shape * sizeof(std::string);
    if (shapes.size() >= limits_.max_shapes) evictLeastCountedShape();
    if (shapes.size() >= limits_.max_shapes || !charge_.take(bytes)) {
      if (shapes.size() < limits_.max_shapes) dropped_for_memory += op.count;
      other_shape_ops += op.count;
      return;
    }
    s.kind = op.kind;
    s.multi = op.multi;
    s.upsert = op.upsert;
    s.samples.reserve(limits_.samples_per_shape);
    it = shapes.emplace(op.shape_hash, std::move(s)).first;
  }
  ShapeState& s = it->second;
  s.count += op.count;
  s.commands += op.commands;
  if (!op.modified.empty()) mergeModified(s, op.modified, op.count);
  if (op.filter.empty()) return;
  ++s.offered;
  if (op.filter.size() > kMaxSampledFilterBytes) return;  // counted in the shape, not kept
  std::string* slot;
  const bool appended = s.samples.size() < limits_.samples_per_shape;
  if (appended) {
    slot = &s.samples.emplace_back();
  } else {
    uint64_t j = nextRandom() % s.offered;
    if (j >= s.samples.size()) return;
    slot = &s.samples[j];
  }
  const size_t before = heapBytes(*slot), need = op.filter.size() + 1 + 16;
  if (need > before && !charge_.take(need - before)) {
    if (appended) s.samples.pop_back();
    return void(++dropped_for_memory);
  }
  assignSample(*slot, op.filter);  // reuses the replaced sample's memory unless it was much larger
  charge_.settle(std::max(need, before), heapBytes(*slot));
}

size_t modifiedIndex(const ShapeState& s, std::string_view name, bool& room) {
  name = name.substr(0, kMaxFieldNameBytes);
  room = s.modified.size() < kMaxShapeModifiedNames;
  return static_cast<size_t>(std::find(s.modified.begin(), s.modified.end(), name) - s.modified.begin());
}

// A statement's modified names join the shape's, each counted (a replacement of the same shape may
// write a new value where the first kept it; an update's cut shape text may hide other paths). A
// name list seen before is recognised by its hash and counted by its bits, without a walk.
void NamespaceState::mergeModified(ShapeState& s, std::string_view names, uint64_t count) {
  auto countBits = [&](const ShapeState::NameList& l) {
    for (size_t w = 0; w < l.names.size(); ++w)
      for (uint64_t bits = l.names[w]; bits; bits &= bits - 1) s.modified_counts[w * 64 + std::countr_zero(bits)] += count;
  };
  const uint64_t h = std::hash<std::string_view>{}(names);
  for (uint8_t i = 0; i < s.modified_lists_kept; ++i)
    if (s.modified_lists[i].hash == h) return countBits(s.modified_lists[i]);
  ShapeState::NameList list{h, {}};
  for (size_t start = 0, end; (end = names.find('\0', start)) != std::string_view::npos; start = end + 1) {
    const std::string_view name = names.substr(start, std::min(end - start, kMaxFieldNameBytes));
    bool room = false;
    const size_t i = modifiedIndex(s, name, room);
    if (i == s.modified.size()) {
      if (!room) continue;
      std::string kept(name);
      if (!charge_.take(sizeof(std::string) + sizeof(uint64_t) + heapBytes(kept))) {
        ++dropped_for_memory;
        continue;
      }
      s.modified.push_back(std::move(kept));
      s.modified_counts.push_back(0);
    }
    list.names[i / 64] |= uint64_t{1} << (i % 64);
  }
  countBits(list);
  if (s.modified_lists_kept < s.modified_lists.size()) s.modified_lists[s.modified_lists_kept++] = list;
}

size_t NamespaceState::memoryBytes() const {
  // Every container's capacity and every string's heap block (malloc's header included), so the
  // figure is what the state really holds (tests compare it with the allocator's own count).
  constexpr size_t kNode = 16 + 16;  // a hash node's next pointer and cached hash, malloc's header
  size_t n = sizeof(*this) + heapBytes(ns_) + heapBytes(encoded_) + heapBytes(projected_) + vectorBytes(seen_) +
             vectorBytes(split_order_) + walk_.heapBytes();
  n += field_index_.bucket_count() * sizeof(void*);
  for (const auto& [path, i] : field_index_) n += sizeof(std::pair<const std::string, size_t>) + kNode + heapBytes(path);
  n += vectorBytes(fields);
  for (const auto& f : fields) {
    n += heapBytes(f.path) + vectorBytes(f.hll.registers());
    n += f.freq.entryCapacity() * sizeof(SpaceSaving::Entry) + 16 + f.freq.indexSlots() * sizeof(uint32_t) + 16;
    for (const auto& e : f.freq.entries()) n += heapBytes(e.label);
    n += f.distinct.arrayBytes();
    for (const auto& [h, v] : f.distinct.values()) n += heapBytes(v);
    n += heapBytes(f.max) + heapBytes(f.min) + stringsBytes(f.splits);
    n += vectorBytes(f.ranged_shard_inserts) + vectorBytes(f.hashed_shard_inserts) + vectorBytes(f.decoded.splits);
  }
  n += vectorBytes(reservoir);
  for (const auto& s : reservoir) n += heapBytes(s.doc);
  n += shapes.bucket_count() * sizeof(void*);
  for (const auto& [h, s] : shapes) {
    n += sizeof(std::pair<const uint64_t, ShapeState>) + kNode + heapBytes(s.shape);
    n += stringsBytes(s.samples) + stringsBytes(s.modified) + vectorBytes(s.modified_counts) + stringsBytes(s.sort);
  }
  return n;
}

// ---- export / merge -------------------------------------------------------------------------

const KeyFacts* NamespaceState::importedFacts(std::string_view key_json) const {
  for (const auto& k : imported_facts)
    if (k.key_json == key_json) return &k;
  return nullptr;
}

void NamespaceState::sampleSpan(int64_t& first, int64_t& last, uint64_t& count) const {
  first = imported_first_us, last = imported_last_us, count = imported_samples;
  for (const auto& s : reservoir) first = std::min(first, s.time_us), last = std::max(last, s.time_us);
  count += reservoir.size();
}

}  // namespace shardscope::evaluation
