// Chunk map validation and lookup (containment rules: mongo-semantics.md E).
#include "routing/chunk_map.h"

#include <cstring>

namespace shardscope::routing {
namespace {

std::string toJson(const std::vector<uint8_t>& bytes) {
  bson_t doc;
  if (!bson_init_static(&doc, bytes.data(), bytes.size())) return "<invalid BSON>";
  char* s = bson_as_relaxed_extended_json(&doc, nullptr);
  std::string out = s ? s : "<invalid BSON>";
  bson_free(s);
  return out;
}

// Reads one bound document into `width` Bounds, checking names against the pattern.
bool readBound(const ShardKeyPattern& pattern, const std::vector<uint8_t>& bytes, Bound* out, std::string& error) {
  bson_t doc;
  bson_iter_t it;
  if (!bson_init_static(&doc, bytes.data(), bytes.size()) || !bson_iter_init(&it, &doc)) {
    error = "bound is not a valid BSON document";
    return false;
  }
  size_t i = 0;
  while (bson_iter_next(&it)) {
    if (i >= pattern.size() || pattern.field(i).path != bson_iter_key(&it)) {
      error = "bound " + toJson(bytes) + " does not match the key pattern " + pattern.toJson();
      return false;
    }
    const bson_value_t& v = *bson_iter_value(&it);
    if (pattern.field(i).hashed && v.value_type != BSON_TYPE_INT64 && v.value_type != BSON_TYPE_INT32 &&
        v.value_type != BSON_TYPE_MINKEY && v.value_type != BSON_TYPE_MAXKEY) {
      error = "bound " + toJson(bytes) + ": hashed field '" + pattern.field(i).path +
              "' must be a NumberLong hash, MinKey or MaxKey";
      return false;
    }
    if (v.value_type == BSON_TYPE_ARRAY) {
      error = "bound " + toJson(bytes) + " contains an array";
      return false;
    }
    out[i++] = Bound::of(v);
  }
  if (i != pattern.size()) {
    error = "bound " + toJson(bytes) + " does not match the key pattern " + pattern.toJson();
    return false;
  }
  return true;
}

bool allOfType(std::span<const Bound> key, bson_type_t t) {
  for (const auto& b : key)
    if (b.edge != 0 || b.value.value_type != t) return false;
  return true;
}

}  // namespace

bool ChunkMap::build(const ShardKeyPattern& pattern, std::vector<ChunkInput> chunks, std::string& error) {
  width_ = pattern.size();
  docs_.clear();
  bounds_.clear();
  first_prefix_.clear();
  shards_.clear();
  owning_.reset();
  if (chunks.empty()) {
    error = "no chunks";
    return false;
  }
  size_t n = chunks.size();
  std::vector<Bound> mins(n * width_), maxs(n * width_);
  docs_.reserve(2 * n);
  for (size_t i = 0; i < n; ++i) {
    std::string why;
    docs_.push_back(std::move(chunks[i].min));
    if (!readBound(pattern, docs_.back(), &mins[i * width_], why)) {
      error = "chunk " + std::to_string(i) + ": min " + why;
      return false;
    }
    docs_.push_back(std::move(chunks[i].max));
    if (!readBound(pattern, docs_.back(), &maxs[i * width_], why)) {
      error = "chunk " + std::to_string(i) + ": max " + why;
      return false;
    }
  }
  auto min_of = [&](size_t i) { return std::span<const Bound>(&mins[i * width_], width_); };
  auto max_of = [&](size_t i) { return std::span<const Bound>(&maxs[i * width_], width_); };
  auto describe = [&](size_t i) {
    return "chunk " + std::to_string(i) + " [" + toJson(docs_[2 * i]) + ", " + toJson(docs_[2 * i + 1]) + ")";
  };
  if (!allOfType(min_of(0), BSON_TYPE_MINKEY)) {
    error = describe(0) + ": the first chunk must start at MinKey in every field (chunks sorted by min?)";
    return false;
  }
  // Sortedness first: an unsorted file would otherwise be reported as a confusing gap.
  for (size_t i = 0; i + 1 < n; ++i) {
    if (compareKeys(min_of(i + 1), min_of(i)) < 0) {
      error = describe(i + 1) + ": chunks are not sorted by min (it starts before " + describe(i) + ")";
      return false;
    }
  }
  for (size_t i = 0; i < n; ++i) {
    if (compareKeys(min_of(i), max_of(i)) >= 0) {
      error = describe(i) + ": min is not below max";
      return false;
    }
    if (i + 1 == n) break;
    int c = compareKeys(max_of(i), min_of(i + 1));
    if (c < 0) {
      error = "gap between " + describe(i) + " and " + describe(i + 1);
      return false;
    }
    if (c > 0) {
      error = "overlap between " + describe(i) + " and " + describe(i + 1);
      return false;
    }
  }
  if (!allOfType(max_of(n - 1), BSON_TYPE_MAXKEY)) {
    error = describe(n - 1) + ": the last chunk must end at MaxKey in every field";
    return false;
  }
  bounds_.assign(mins.begin(), mins.end());
  bounds_.insert(bounds_.end(), max_of(n - 1).begin(), max_of(n - 1).end());
  first_prefix_.clear();
  for (size_t j = 0; j <= n; ++j) first_prefix_.push_back(orderPrefix(bounds_[j * width_]));
  shards_.reserve(n);
  for (const auto& c : chunks) {
    shards_.push_back(c.shard);
    owning_.set(c.shard);
  }
  owning_count_ = shardCount(owning_);
  return true;
}

int ChunkMap::compareBoundary(size_t j, std::span<const Bound> key, uint64_t key_prefix) const {
  const uint64_t p = first_prefix_[j];
  if (p != key_prefix) return p < key_prefix ? -1 : 1;
  return compareKeys({bounds_.data() + j * width_, width_}, key);
}

size_t ChunkMap::chunkForKey(std::span<const Bound> key) const {
  if (key.empty()) return shards_.size() - 1;  // equal to every boundary, as compareKeys has it
  return chunkForKey(key, orderPrefix(key[0]));
}

size_t ChunkMap::chunkForKey(std::span<const Bound> key, uint64_t key_prefix) const {
  // First chunk whose max exceeds key (upper_bound on max); chunk i's max is boundary i + 1.
  size_t lo = 0, hi = shards_.size();
  while (lo < hi) {
    size_t mid = (lo + hi) / 2;
    if (compareBoundary(mid + 1, key, key_prefix) > 0) {
      hi = mid;
    } else {
      lo = mid + 1;
    }
  }
  return lo < shards_.size() ? lo : shards_.size() - 1;  // an all-MaxKey key belongs to the last chunk
}

void ChunkMap::addShardsForRange(std::span<const Bound> lo, std::span<const Bound> hi, ShardSet& out) const {
  if (compareKeys(lo, hi) > 0) return;
  addOwnersFrom(chunkForKey(lo), hi, hi.empty() ? 0 : orderPrefix(hi[0]), out);
}

bool ChunkMap::addShardsForPrefixRange(std::span<const Bound> lo, std::span<const Bound> hi, ShardSet& out) const {
  const uint64_t prefix = orderPrefix(lo[0]);  // hi[0] is the same value: the same summary
  return addOwnersFrom(chunkForKey(lo, prefix), hi, prefix, out);
}

bool ChunkMap::addOwnersFrom(size_t first, std::span<const Bound> hi, uint64_t hi_prefix, ShardSet& out) const {
  const uint16_t owner = shards_[first];
  bool one_owner = true;
  out.set(owner);
  for (size_t i = first + 1; i < shards_.size(); ++i) {
    // The chunk starts after the range (an empty `hi` is equal to every boundary: no chunk does).
    if (!hi.empty() && compareBoundary(i, hi, hi_prefix) > 0) break;
    one_owner = one_owner && shards_[i] == owner;
    out.set(shards_[i]);
    if ((i & 15) == 15 && (out & owning_) == owning_) break;
  }
  return one_owner;
}

}  // namespace shardscope::routing
