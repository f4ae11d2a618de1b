// targetPlainEquality: see plain_equality_filter.h. The reasons are the general analysis's own
// texts, so a page cannot tell which path decided.
#include "routing/plain_equality_filter.h"

#include <cstring>
#include <new>
#include <string_view>

#include "protocol/bson_elements.h"
#include "routing/filter_bounds.h"
#include "routing/shard_key_hash.h"

namespace shardscope::routing {
namespace {

// Values the general analysis turns into one point of the key, with no special case: not null or
// undefined (missing-field semantics), not regex, array or document (patterns, element matching,
// literal sub-documents), not MinKey/MaxKey or the deprecated types.
bool pointValue(bson_type_t t) {
  switch (t) {
    case BSON_TYPE_DOUBLE:
    case BSON_TYPE_UTF8:
    case BSON_TYPE_BINARY:
    case BSON_TYPE_OID:
    case BSON_TYPE_BOOL:
    case BSON_TYPE_DATE_TIME:
    case BSON_TYPE_INT32:
    case BSON_TYPE_TIMESTAMP:
    case BSON_TYPE_INT64:
    case BSON_TYPE_DECIMAL128: return true;
    default: return false;
  }
}

// `a` is `b` followed by ".more": a path inside `b`.
bool isPathInside(std::string_view a, std::string_view b) {
  return a.size() > b.size() && a[b.size()] == '.' && a.starts_with(b);
}

// The key field named exactly `key`; -1 when none; -2 when `key` overlaps a key field's path
// ({a: ...} against the key field "a.b", or {"a.b": ...} against "a"), which the general analysis
// reads in ways this path does not.
int keyFieldOf(const ShardKeyPattern& pattern, std::string_view key) {
  for (size_t i = 0; i < pattern.size(); ++i) {
    const std::string& path = pattern.field(i).path;
    if (path == key) return static_cast<int>(i);
    if (isPathInside(path, key) || isPathInside(key, path)) return -2;
  }
  return -1;
}

}  // namespace

bool targetPlainEquality(const CollectionRouting& coll, const bson_t& filter, bool simple_collation,
                         const TargetOptions& options, FilterTarget& out) {
  if (!simple_collation) return false;
  const ShardKeyPattern& pattern = coll.key;
  const size_t width = pattern.size();
  // The general analysis visits each element once to check operators, once per key field for
  // equalities and once for bounds: charged the same here, so a batch of statements runs out of
  // budget where it did before.
  const size_t units_per_element = width + 2;
  bson_value_t pinned[kMaxKeyFields];
  uint32_t pinned_mask = 0;
  size_t count = 0;
  protocol::BsonElements elements(bson_get_data(&filter), filter.len);
  protocol::BsonElement e;
  while (elements.next(e)) {
    if (++count * units_per_element > options.analysis_budget) return false;
    const std::string_view key = e.key;
    if (!key.empty() && key[0] == '$') return false;
    const auto type = static_cast<bson_type_t>(e.type);
    const int field = keyFieldOf(pattern, key);
    if (field == -2) return false;
    if (field < 0) {
      // Another field: it constrains no key field, unless it is an operator object or an array.
      if (type == BSON_TYPE_DOCUMENT || type == BSON_TYPE_ARRAY) return false;
      continue;
    }
    const uint32_t bit = 1u << field;
    if (!pointValue(type) || (pinned_mask & bit)) return false;
    pinned_mask |= bit;
    protocol::scalarValue(e, pinned[field]);
  }
  if (elements.failed()) return false;  // bytes that do not walk: the general analysis says so

  out.spent = count * units_per_element;
  if (int h = pattern.hashedField(); h >= 0 && (pinned_mask & (1u << h))) out.spent += kHashedValueUnits;
  auto bound = [&](size_t i) {
    return pattern.field(i).hashed ? Bound::int64(hashShardKeyValue(pinned[i])) : Bound::of(pinned[i]);
  };
  const uint32_t all = width == 32 ? ~0u : (1u << width) - 1;
  if (pinned_mask == all) {
    out.key.size = width;
    for (size_t i = 0; i < width; ++i) out.key.fields[i] = bound(i);
    out.key_pinned = out.full_key = true;
    out.shards.set(coll.chunks.shardForKey(out.key.span()));
    out.targeting = Targeting::Single;
    out.reason = "equality on the full shard key";
    return true;
  }
  if (!(pinned_mask & 1u)) {
    targetAllChunkOwners(coll, "filter does not constrain the shard key prefix: broadcast", out);
    return true;
  }
  // One range: the pinned prefix, then the first free field from MinKey to MaxKey; after it a
  // pinned field keeps its point and a free one spans everything (KeyRanges::flatten).
  // Raw storage, `width` bounds constructed in it: an array of 32 Bounds would be zeroed whole.
  alignas(Bound) unsigned char lo_bytes[sizeof(Bound) * kMaxKeyFields], hi_bytes[sizeof(Bound) * kMaxKeyFields];
  Bound* lo = reinterpret_cast<Bound*>(lo_bytes);
  Bound* hi = reinterpret_cast<Bound*>(hi_bytes);
  for (size_t i = 0; i < width; ++i) {
    const bool point = pinned_mask & (1u << i);
    new (&lo[i]) Bound(point ? bound(i) : Bound::minKey());
    new (&hi[i]) Bound(point ? lo[i] : Bound::maxKey());
  }
  // `out.shards` is empty here (targetFilter's reset, or a fresh FilterTarget): one owner is one shard.
  const bool single = coll.chunks.addShardsForPrefixRange({lo, width}, {hi, width}, out.shards);
  out.targeting = single ? Targeting::Single : Targeting::Multi;
  out.reason = single ? "shard key bounds select one shard" : "shard key bounds select several shards";
  return true;
}

}  // namespace shardscope::routing
