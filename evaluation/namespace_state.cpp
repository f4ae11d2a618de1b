#include "evaluation/namespace_state.h"
#include "evaluation/key_facts_from_samples.h"

#include <algorithm>
#include <bit>
#include <cstring>

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

// `guess`: where the field probably is (documents tend to list fields in the same order).
size_t NamespaceState::fieldIndex(std::string_view path, size_t guess) const {
  if (guess < fields.size() && fields[guess].path == path) return guess;
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
            [](const auto& a, const auto& b) { return common::compareValues(a.first, b.first) < 0; });
  size_t n = 0;
  if (order.size() >= 2 && shards >= 2) {
    const bson_value_t* last = &order.front().first;  // a split at the minimum adds nothing
    for (uint32_t i = 1; i < shards; ++i) {
      const auto& s = order[order.size() * i / shards];
      if (common::compareValues(*last, s.first) >= 0) continue;  // duplicates: fewer chunks
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
    if (common::compareValues(splits[mid], v) <= 0)
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
    if (common::compareValues(*compared, d.max) > 0) {
      keep();
      ++f.new_max;
      f.max = encoded_;
      decodeValue(f.max, d.max);
    } else if (common::compareValues(*compared, d.min) < 0) {
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

void NamespaceState::observePath(std::string_view path, const bson_iter_t& it, size_t position, const uint64_t* hash,
                                 bool whole) {
  FieldState* f = nullptr;
  if (size_t i = fieldIndex(path, position); i != kUntracked) {
    f = &fields[i];
    seen_[i] = 1;
  } else if (fields.size() < limits_.max_fields) {
    if ((f = trackField(path))) seen_.push_back(1);
  }
  if (!f) return;
  if (bson_iter_type(&it) == BSON_TYPE_ARRAY) {  // not a valid shard key value; count as missing
    ++f->missing;
    ++f->arrays;
    return;
  }
  const bson_value_t& v = *bson_iter_value(const_cast<bson_iter_t*>(&it));
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
    for (uint32_t i = 0; i < digest.count && bson_iter_next(&it); ++i) {
      const uint64_t hash = digest.hash(i);
      observePath(std::string_view(bson_iter_key(&it), bson_iter_key_len(&it)), it, i, &hash, digest.whole(i));
    }
  }
  finishInsert(time_us, nullptr, digest.projection);
}

// The fields the document did not have, and the reservoir: `doc` projected, or its `projection`.
void NamespaceState::finishInsert(int64_t time_us, const bson_t* doc, std::string_view projection) {
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

void NamespaceState::applyOp(const OpRecord& op) {
  (isRead(op.kind) ? reads : writes)++;
  auto it = shapes.find(op.shape_hash);
  if (it == shapes.end()) {
    ShapeState s;
    s.shape = std::string(op.shape.substr(0, kMaxShapeTextBytes));
    s.modified = splitNames(op.modified);
    s.sort = splitNames(op.sort);
    const size_t bytes = sizeof(std::pair<const uint64_t, ShapeState>) + 32 + heapBytes(s.shape) + stringsBytes(s.modified) +
                         stringsBytes(s.sort) + limits_.samples_per_shape * sizeof(std::string);
    if (shapes.size() >= limits_.max_shapes || !charge_.take(bytes)) {
      if (shapes.size() < limits_.max_shapes) ++dropped_for_memory;
      ++other_shape_ops;
      return;
    }
    s.kind = op.kind;
    s.multi = op.multi;
    s.upsert = op.upsert;
    s.samples.reserve(limits_.samples_per_shape);
    it = shapes.emplace(op.shape_hash, std::move(s)).first;
  }
  ShapeState& s = it->second;
  ++s.count;
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
    n += f.distinct.capacity() * sizeof(std::pair<uint64_t, std::string>) + 16;
    for (const auto& [h, v] : f.distinct.values()) n += heapBytes(v);
    n += heapBytes(f.max) + heapBytes(f.min) + stringsBytes(f.splits);
    n += vectorBytes(f.ranged_shard_inserts) + vectorBytes(f.hashed_shard_inserts) + vectorBytes(f.decoded.splits);
  }
  n += vectorBytes(reservoir);
  for (const auto& s : reservoir) n += heapBytes(s.doc);
  n += shapes.bucket_count() * sizeof(void*);
  for (const auto& [h, s] : shapes) {
    n += sizeof(std::pair<const uint64_t, ShapeState>) + kNode + heapBytes(s.shape);
    n += stringsBytes(s.samples) + stringsBytes(s.modified) + stringsBytes(s.sort);
  }
  return n;
}

// ---- export / merge -------------------------------------------------------------------------

namespace {

void appendBin(bson_t* doc, const char* key, std::string_view bytes) {
  bson_append_binary(doc, key, -1, BSON_SUBTYPE_BINARY, reinterpret_cast<const uint8_t*>(bytes.data()),
                     static_cast<uint32_t>(bytes.size()));
}

void appendCounts(bson_t* doc, const char* key, const std::vector<double>& v) {
  bson_t arr;
  bson_append_array_begin(doc, key, -1, &arr);
  char idx[16];
  for (size_t i = 0; i < v.size(); ++i) {
    const char* k;
    bson_uint32_to_string(static_cast<uint32_t>(i), &k, idx, sizeof idx);
    bson_append_double(&arr, k, -1, v[i]);
  }
  bson_append_array_end(doc, &arr);
}

void appendStrings(bson_t* doc, const char* key, const std::vector<std::string>& v) {
  bson_t arr;
  bson_append_array_begin(doc, key, -1, &arr);
  char idx[16];
  for (size_t i = 0; i < v.size(); ++i) {
    const char* k;
    bson_uint32_to_string(static_cast<uint32_t>(i), &k, idx, sizeof idx);
    bson_append_utf8(&arr, k, -1, v[i].data(), static_cast<int>(v[i].size()));
  }
  bson_append_array_end(doc, &arr);
}

int64_t getInt(const bson_t& doc, const char* key) {
  bson_iter_t it;
  if (bson_iter_init_find(&it, &doc, key) && BSON_ITER_HOLDS_NUMBER(&it)) return bson_iter_as_int64(&it);
  return 0;
}

std::string getString(const bson_t& doc, const char* key) {
  bson_iter_t it;
  if (bson_iter_init_find(&it, &doc, key) && BSON_ITER_HOLDS_UTF8(&it)) {
    uint32_t len = 0;
    const char* s = bson_iter_utf8(&it, &len);
    return std::string(s, len);
  }
  return {};
}

std::string getBin(const bson_iter_t& it) {
  if (!BSON_ITER_HOLDS_BINARY(&it)) return {};
  bson_subtype_t st;
  uint32_t len = 0;
  const uint8_t* data = nullptr;
  bson_iter_binary(&it, &st, &len, &data);
  return std::string(reinterpret_cast<const char*>(data), len);
}

std::string getBin(const bson_t& doc, const char* key) {
  bson_iter_t it;
  if (bson_iter_init_find(&it, &doc, key)) return getBin(it);
  return {};
}

// Calls f(const bson_t&) for each sub-document of array doc[key].
template <typename F>
void forEachDoc(const bson_t& doc, const char* key, F&& f) {
  bson_iter_t it, arr;
  if (!bson_iter_init_find(&it, &doc, key) || !BSON_ITER_HOLDS_ARRAY(&it) || !bson_iter_recurse(&it, &arr)) return;
  while (bson_iter_next(&arr)) {
    bson_t sub;
    if (common::documentAt(arr, sub)) f(sub);
  }
}

std::vector<double> getCounts(const bson_t& doc, const char* key) {
  std::vector<double> out;
  bson_iter_t it, arr;
  if (!bson_iter_init_find(&it, &doc, key) || !BSON_ITER_HOLDS_ARRAY(&it) || !bson_iter_recurse(&it, &arr)) return out;
  while (bson_iter_next(&arr)) out.push_back(bson_iter_as_double(&arr));
  return out;
}

std::vector<std::string> getStrings(const bson_t& doc, const char* key) {
  std::vector<std::string> out;
  bson_iter_t it, arr;
  if (!bson_iter_init_find(&it, &doc, key) || !BSON_ITER_HOLDS_ARRAY(&it) || !bson_iter_recurse(&it, &arr)) return out;
  while (bson_iter_next(&arr)) {
    if (BSON_ITER_HOLDS_UTF8(&arr)) {
      uint32_t len = 0;
      const char* s = bson_iter_utf8(&arr, &len);
      out.emplace_back(s, len);
    } else if (BSON_ITER_HOLDS_BINARY(&arr)) {
      out.push_back(getBin(arr));
    }
  }
  return out;
}

void addCounts(std::vector<double>& into, const std::vector<double>& from) {
  if (into.size() < from.size()) into.resize(from.size(), 0);
  for (size_t i = 0; i < from.size(); ++i) into[i] += from[i];
}

bool lessEncoded(const std::string& a, const std::string& b) {
  bson_value_t va, vb;
  if (!decodeValue(a, va) || !decodeValue(b, vb)) return false;
  return common::compareValues(va, vb) < 0;
}

}  // namespace

void NamespaceState::toBson(bson_t* out) const {
  bson_append_utf8(out, "ns", -1, ns_.c_str(), -1);
  bson_append_int32(out, "shards", -1, static_cast<int32_t>(limits_.simulated_shards));
  bson_append_int64(out, "inserts", -1, static_cast<int64_t>(inserts));
  bson_append_int64(out, "insertBytes", -1, static_cast<int64_t>(insert_bytes));
  bson_append_int64(out, "reads", -1, static_cast<int64_t>(reads));
  bson_append_int64(out, "writes", -1, static_cast<int64_t>(writes));
  bson_append_int64(out, "otherShapeOps", -1, static_cast<int64_t>(other_shape_ops));
  bson_append_int64(out, "upserted", -1, static_cast<int64_t>(upserted));
  bson_append_int64(out, "upsertsMatched", -1, static_cast<int64_t>(upserts_matched));
  bson_append_int64(out, "replacements", -1, static_cast<int64_t>(replacements));
  bson_t arr, item;
  char idx[16];
  const char* k;
  bson_append_array_begin(out, "fields", -1, &arr);
  for (size_t i = 0; i < fields.size(); ++i) {
    const FieldState& f = fields[i];
    bson_uint32_to_string(static_cast<uint32_t>(i), &k, idx, sizeof idx);
    bson_append_document_begin(&arr, k, -1, &item);
    bson_append_utf8(&item, "path", -1, f.path.c_str(), -1);
    bson_append_int64(&item, "count", -1, static_cast<int64_t>(f.count));
    appendBin(&item, "hll", {reinterpret_cast<const char*>(f.hll.registers().data()), f.hll.registers().size()});
    bson_append_int64(&item, "freqTotal", -1, static_cast<int64_t>(f.freq.total()));
    bson_append_int64(&item, "freqFloor", -1, static_cast<int64_t>(f.freq.floor()));
    bson_t fa, fe;
    bson_append_array_begin(&item, "freq", -1, &fa);
    for (size_t j = 0; j < f.freq.entries().size(); ++j) {
      const auto& e = f.freq.entries()[j];
      char idx2[16];
      const char* k2;
      bson_uint32_to_string(static_cast<uint32_t>(j), &k2, idx2, sizeof idx2);
      bson_append_document_begin(&fa, k2, -1, &fe);
      bson_append_int64(&fe, "h", -1, static_cast<int64_t>(e.hash));
      bson_append_int64(&fe, "c", -1, static_cast<int64_t>(e.count));
      bson_append_int64(&fe, "e", -1, static_cast<int64_t>(e.error));
      if (!e.label.empty()) bson_append_utf8(&fe, "l", -1, e.label.c_str(), -1);
      bson_append_document_end(&fa, &fe);
    }
    bson_append_array_end(&item, &fa);
    bson_append_array_begin(&item, "distinct", -1, &fa);
    size_t j = 0;
    for (const auto& [h, v] : f.distinct.values()) {
      char idx2[16];
      const char* k2;
      bson_uint32_to_string(static_cast<uint32_t>(j++), &k2, idx2, sizeof idx2);
      bson_append_document_begin(&fa, k2, -1, &fe);
      bson_append_int64(&fe, "h", -1, static_cast<int64_t>(h));
      appendBin(&fe, "v", v);
      bson_append_document_end(&fa, &fe);
    }
    bson_append_array_end(&item, &fa);
    appendBin(&item, "max", f.max);
    appendBin(&item, "min", f.min);
    bson_append_int64(&item, "newMax", -1, static_cast<int64_t>(f.new_max));
    bson_append_int64(&item, "newMin", -1, static_cast<int64_t>(f.new_min));
    bson_append_int64(&item, "compared", -1, static_cast<int64_t>(f.compared));
    bson_append_int64(&item, "oid", -1, static_cast<int64_t>(f.type_oid));
    bson_append_int64(&item, "date", -1, static_cast<int64_t>(f.type_date));
    bson_append_int64(&item, "number", -1, static_cast<int64_t>(f.type_number));
    bson_append_int64(&item, "string", -1, static_cast<int64_t>(f.type_string));
    bson_append_int64(&item, "other", -1, static_cast<int64_t>(f.type_other));
    bson_append_int64(&item, "missing", -1, static_cast<int64_t>(f.missing));
    bson_append_int64(&item, "arrays", -1, static_cast<int64_t>(f.arrays));
    appendCounts(&item, "ranged", f.ranged_shard_inserts);
    appendCounts(&item, "hashed", f.hashed_shard_inserts);
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
    bson_append_utf8(&item, "shape", -1, s.shape.c_str(), -1);
    bson_append_utf8(&item, "kind", -1, opKindName(s.kind), -1);
    bson_append_bool(&item, "multi", -1, s.multi);
    bson_append_bool(&item, "upsert", -1, s.upsert);
    bson_append_int64(&item, "count", -1, static_cast<int64_t>(s.count));
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
    appendStrings(&item, "sort", s.sort);
    FieldRoles roles = shapeRoles(s);
    appendStrings(&item, "eq", roles.eq);
    appendStrings(&item, "range", roles.range);
    bson_append_document_end(&arr, &item);
  }
  bson_append_array_end(out, &arr);
}

void NamespaceState::merge(const NamespaceState& o) {
  inserts += o.inserts;
  insert_bytes += o.insert_bytes;
  reads += o.reads;
  writes += o.writes;
  other_shape_ops += o.other_shape_ops;
  upserted += o.upserted;
  upserts_matched += o.upserts_matched;
  replacements += o.replacements;
  for (const FieldState& of : o.fields) {
    if (!field(of.path) && fields.size() >= limits_.max_fields) continue;
    FieldState* tracked = trackField(of.path);
    if (!tracked) continue;
    FieldState& f = *tracked;
    f.count += of.count;
    f.hll.merge(of.hll);
    f.freq.merge(of.freq);
    f.distinct.merge(of.distinct);
    if (f.max.empty() || (!of.max.empty() && lessEncoded(f.max, of.max))) f.max = of.max;
    if (f.min.empty() || (!of.min.empty() && lessEncoded(of.min, f.min))) f.min = of.min;
    f.new_max += of.new_max;
    f.new_min += of.new_min;
    f.compared += of.compared;
    f.type_oid += of.type_oid;
    f.type_date += of.type_date;
    f.type_number += of.type_number;
    f.type_string += of.type_string;
    f.type_other += of.type_other;
    f.missing += of.missing;
    f.arrays += of.arrays;
    addCounts(f.ranged_shard_inserts, of.ranged_shard_inserts);
    addCounts(f.hashed_shard_inserts, of.hashed_shard_inserts);
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
    s.offered += os.offered;
    for (const auto& f : os.samples)
      if (s.samples.size() < limits_.samples_per_shape) s.samples.push_back(f);
    for (const auto& e : os.eq_fields)
      if (std::find(s.eq_fields.begin(), s.eq_fields.end(), e) == s.eq_fields.end()) s.eq_fields.push_back(e);
    for (const auto& e : os.range_fields)
      if (std::find(s.range_fields.begin(), s.range_fields.end(), e) == s.range_fields.end()) s.range_fields.push_back(e);
  }
}

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
  o.inserts = getInt(doc, "inserts");
  o.insert_bytes = getInt(doc, "insertBytes");
  o.reads = getInt(doc, "reads");
  o.writes = getInt(doc, "writes");
  o.other_shape_ops = getInt(doc, "otherShapeOps");
  o.upserted = getInt(doc, "upserted");
  o.upserts_matched = getInt(doc, "upsertsMatched");
  o.replacements = getInt(doc, "replacements");
  bool ok = true;
  forEachDoc(doc, "fields", [&](const bson_t& fd) {
    std::string path = getString(fd, "path");
    if (path.empty() || o.field(path)) return;
    if (o.fields.size() >= limits_.max_fields) return;
    FieldState* tracked = o.trackField(path);
    if (!tracked) return;
    FieldState& f = *tracked;
    f.count = getInt(fd, "count");
    std::string hll = getBin(fd, "hll");
    if (!f.hll.load(reinterpret_cast<const uint8_t*>(hll.data()), hll.size())) ok = false;
    // Each counter keeps its error bound: a counter that replaced others ("c":47,"e":46) is
    // known to hold one occurrence of its value, not 47.
    std::vector<SpaceSaving::Entry> counters;
    forEachDoc(fd, "freq", [&](const bson_t& e) {
      int64_t c = getInt(e, "c"), err = getInt(e, "e");
      if (c < 0 || err < 0) ok = false;
      counters.push_back({static_cast<uint64_t>(getInt(e, "h")), static_cast<uint64_t>(std::max<int64_t>(c, 0)),
                          static_cast<uint64_t>(std::max<int64_t>(err, 0)), getString(e, "l")});
    });
    f.freq = SpaceSaving::fromCounters(limits_.heavy_hitters, std::move(counters),
                                       static_cast<uint64_t>(getInt(fd, "freqTotal")),
                                       static_cast<uint64_t>(std::max<int64_t>(getInt(fd, "freqFloor"), 0)));
    forEachDoc(fd, "distinct", [&](const bson_t& e) { f.distinct.add(getInt(e, "h"), getBin(e, "v")); });
    f.max = getBin(fd, "max");
    f.min = getBin(fd, "min");
    f.new_max = getInt(fd, "newMax");
    f.new_min = getInt(fd, "newMin");
    f.compared = getInt(fd, "compared");
    f.type_oid = getInt(fd, "oid");
    f.type_date = getInt(fd, "date");
    f.type_number = getInt(fd, "number");
    f.type_string = getInt(fd, "string");
    f.type_other = getInt(fd, "other");
    f.missing = getInt(fd, "missing");
    f.arrays = getInt(fd, "arrays");
    f.ranged_shard_inserts = getCounts(fd, "ranged");
    f.hashed_shard_inserts = getCounts(fd, "hashed");
    if (f.ranged_shard_inserts.size() != limits_.simulated_shards ||
        f.hashed_shard_inserts.size() != limits_.simulated_shards)
      ok = false;
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
    s.offered = getInt(sd, "offered");
    s.samples = getStrings(sd, "samples");
    if (s.samples.size() > limits_.samples_per_shape) s.samples.resize(limits_.samples_per_shape);
    s.modified = getStrings(sd, "modified");
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
