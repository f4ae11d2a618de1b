// The cheaper paths of routing::target (issue 29) against the general ones they stand in for, on
// generated inputs:
// - ChunkMap::addShardsForPrefixRange against addShardsForRange + isSingleShard;
// - the view's key-index lookups (common::subDocument(view), findBodyField) against walking the
//   body (subDocument(body), bson_iter_init_find), on well-formed and damaged bodies;
// - ShardKeyPattern::extractFromDocument's top-level fields against bson_iter_init_find's reading;
// - readWriteStatement against its former libbson-iterator self, on well-formed and damaged statements.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "common/command_fields.h"
#include "protocol/command_view.h"
#include "protocol/op_msg.h"
#include "routing/chunk_map.h"
#include "routing/routing_file.h"
#include "routing/shard_key_hash.h"
#include "routing/write_statement.h"
#include "routing_test_util.h"

namespace shardscope::routing {
namespace {

using testing::loadData;

// ---------------------------------------------------------------- prefix ranges

// A key {a, b, c} split on every field, so ranges pinning `a` cross chunk edges further in.
constexpr const char* kThreeFieldTable = R"({"shards": ["s0", "s1", "s2", "s3"], "collections": [
 {"ns": "t.three", "key": {"a": 1, "b": 1, "c": 1}, "chunks": [
  {"min": {"a": {"$minKey": 1}, "b": {"$minKey": 1}, "c": {"$minKey": 1}}, "max": {"a": 5, "b": {"$minKey": 1}, "c": {"$minKey": 1}}, "shard": "s0"},
  {"min": {"a": 5, "b": {"$minKey": 1}, "c": {"$minKey": 1}}, "max": {"a": 5, "b": "m", "c": 3}, "shard": "s1"},
  {"min": {"a": 5, "b": "m", "c": 3}, "max": {"a": 5, "b": "m", "c": 7}, "shard": "s2"},
  {"min": {"a": 5, "b": "m", "c": 7}, "max": {"a": 9, "b": {"$minKey": 1}, "c": {"$minKey": 1}}, "shard": "s3"},
  {"min": {"a": 9, "b": {"$minKey": 1}, "c": {"$minKey": 1}}, "max": {"a": 9, "b": "z", "c": {"$minKey": 1}}, "shard": "s1"},
  {"min": {"a": 9, "b": "z", "c": {"$minKey": 1}}, "max": {"a": {"$maxKey": 1}, "b": {"$maxKey": 1}, "c": {"$maxKey": 1}}, "shard": "s1"}
 ]}]})";

bson_value_t utf8(const char* s) {
  bson_value_t v{};
  v.value_type = BSON_TYPE_UTF8;
  v.value.v_utf8.str = const_cast<char*>(s);
  v.value.v_utf8.len = static_cast<uint32_t>(std::strlen(s));
  return v;
}

// A value for one key field: a chunk edge's bound (half the time), else one near the tables' edges.
Bound someBound(const ChunkMap& chunks, size_t field, std::mt19937& rng) {
  static const char* const kStrings[] = {"", "A", "C0800", "C08000", "C5000", "C50000", "C9999", "EU", "US", "m", "z", "zz"};
  switch (rng() % 4) {
    case 0:
    case 1: {
      const size_t j = rng() % (chunks.chunkCount() + 1);
      return j < chunks.chunkCount() ? chunks.chunkMin(j)[field] : chunks.chunkMax(j - 1)[field];
    }
    case 2: return Bound::of(utf8(kStrings[rng() % std::size(kStrings)]));
    default: return Bound::int64(static_cast<int64_t>(rng() % 12) - 1);
  }
}

TEST(TargetCostPaths, PrefixRangeAddsWhatTheGeneralRangeLookupAdds) {
  std::vector<std::shared_ptr<const RoutingTable>> tables;
  for (const char* name : {"orders_6shards.json", "orders_3shards.yaml", "hashed_4shards.json", "collection_kinds.json"})
    tables.push_back(loadData(name));
  std::string error;
  tables.push_back(parseRoutingText(kThreeFieldTable, false, "three", error));
  ASSERT_TRUE(tables.back()) << error;
  std::mt19937 rng(29003);
  size_t compared = 0, single = 0, several = 0;
  for (const auto& table : tables) {
    ASSERT_TRUE(table);
    for (const auto& [ns, coll] : table->collections()) {
      const ChunkMap& chunks = coll->chunks;
      const size_t width = coll->key.size();
      for (int n = 0; n < 5000; ++n) {
        std::vector<Bound> lo(width), hi(width);
        lo[0] = hi[0] = someBound(chunks, 0, rng);
        for (size_t f = 1; f < width; ++f) {
          if (rng() % 2) {
            lo[f] = hi[f] = someBound(chunks, f, rng);
          } else {
            lo[f] = Bound::minKey();
            hi[f] = Bound::maxKey();
          }
        }
        ShardSet general, prefix;
        chunks.addShardsForRange(lo, hi, general);
        const bool one = chunks.addShardsForPrefixRange(lo, hi, prefix);
        ASSERT_EQ(prefix, general) << ns << " sample " << n;
        ASSERT_EQ(one, isSingleShard(general)) << ns << " sample " << n;
        ++compared;
        (one ? single : several) += 1;
      }
    }
  }
  EXPECT_GT(single, 1000u);
  EXPECT_GT(several, 200u);
  std::printf("compared %zu ranges (one shard %zu, several %zu)\n", compared, single, several);
}

// ---------------------------------------------------------------- the view's key index

// A body of random elements under names a lookup asks for, with documents, arrays and scalars.
std::vector<uint8_t> randomBody(std::mt19937& rng) {
  static const char* const kNames[] = {"filter", "query", "documents", "updates", "limit", "lsid", "x", "filte"};
  bson_t b = BSON_INITIALIZER;
  const char* command = rng() % 2 ? "find" : "insert";  // BSON_APPEND_* name the key twice: chosen once
  BSON_APPEND_UTF8(&b, command, "orders");
  const int n = static_cast<int>(rng() % 7);
  for (int i = 0; i < n; ++i) {
    const char* name = kNames[rng() % std::size(kNames)];
    switch (rng() % 5) {
      case 0: {
        bson_t sub;
        BSON_APPEND_DOCUMENT_BEGIN(&b, name, &sub);
        if (rng() % 2) BSON_APPEND_UTF8(&sub, "customerId", "C0001");
        bson_append_document_end(&b, &sub);
        break;
      }
      case 1: {
        bson_t arr, doc;
        BSON_APPEND_ARRAY_BEGIN(&b, name, &arr);
        for (int d = 0; d < static_cast<int>(rng() % 3); ++d) {
          BSON_APPEND_DOCUMENT_BEGIN(&arr, std::to_string(d).c_str(), &doc);
          BSON_APPEND_INT32(&doc, "q", d);
          bson_append_document_end(&arr, &doc);
        }
        bson_append_array_end(&b, &arr);
        break;
      }
      case 2: BSON_APPEND_UTF8(&b, name, "text"); break;
      case 3: BSON_APPEND_BOOL(&b, name, rng() % 2); break;
      default: BSON_APPEND_INT32(&b, name, 10); break;
    }
  }
  BSON_APPEND_UTF8(&b, "$db", "shop");
  std::vector<uint8_t> bytes(bson_get_data(&b), bson_get_data(&b) + b.len);
  bson_destroy(&b);
  // A quarter of the bodies damaged inside (length prefix and terminator kept, as the view requires).
  if (rng() % 4 == 0 && bytes.size() > 6) bytes[4 + rng() % (bytes.size() - 5)] = static_cast<uint8_t>(rng());
  return bytes;
}

TEST(TargetCostPaths, KeyIndexLookupsFindWhatTheBodyWalkFinds) {
  std::mt19937 rng(29004);
  size_t viewed = 0, found = 0;
  for (int n = 0; n < 40000; ++n) {
    const std::vector<uint8_t> body = randomBody(rng);
    protocol::OpMsg msg;
    msg.body = body;
    protocol::CommandView view;
    if (!protocol::buildCommandView(msg, view).ok()) continue;
    ++viewed;
    for (const char* key : {"filter", "query", "documents", "updates", "lsid", "$db", "nothere"}) {
      bson_t by_index, by_walk;
      const bool a = common::subDocument(view, key, by_index);
      const bool b = common::subDocument(view.body, key, by_walk);
      ASSERT_EQ(a, b) << key << " body " << n;
      if (a) {
        ++found;
        ASSERT_EQ(by_index.len, by_walk.len);
        ASSERT_EQ(bson_get_data(&by_index), bson_get_data(&by_walk));
      }
      bson_iter_t ia, ib;
      const bool fa = common::findBodyField(view, key, ia);
      const bool fb = bson_iter_init_find(&ib, &view.body, key);
      ASSERT_EQ(fa, fb) << key << " body " << n;
      if (fa) {
        ASSERT_EQ(ia.off, ib.off);
        ASSERT_EQ(ia.next_off, ib.next_off);
        ASSERT_EQ(bson_iter_type(&ia), bson_iter_type(&ib));
      }
    }
  }
  EXPECT_GT(viewed, 30000u);
  EXPECT_GT(found, 10000u);
}

// ---------------------------------------------------------------- key extraction

// A document of random elements under the key's names (some twice) and others, of many types.
void appendSome(bson_t* doc, const char* name, std::mt19937& rng) {
  switch (rng() % 12) {
    case 0: {
      const char* customer = rng() % 2 ? "C0800" : "C12345";  // BSON_APPEND_UTF8 names its value twice
      BSON_APPEND_UTF8(doc, name, customer);
      break;
    }
    case 1: BSON_APPEND_INT32(doc, name, static_cast<int32_t>(rng() % 10)); break;
    case 2: BSON_APPEND_INT64(doc, name, static_cast<int64_t>(rng())); break;
    case 3: BSON_APPEND_DOUBLE(doc, name, 2.5); break;
    case 4: BSON_APPEND_DATE_TIME(doc, name, 1767225600000LL); break;
    case 5: BSON_APPEND_NULL(doc, name); break;
    case 6: {
      bson_t sub;
      BSON_APPEND_DOCUMENT_BEGIN(doc, name, &sub);
      BSON_APPEND_INT32(&sub, "id", 1);
      bson_append_document_end(doc, &sub);
      break;
    }
    case 7: {
      bson_t arr;
      BSON_APPEND_ARRAY_BEGIN(doc, name, &arr);
      BSON_APPEND_INT32(&arr, "0", 1);
      bson_append_array_end(doc, &arr);
      break;
    }
    case 8: BSON_APPEND_REGEX(doc, name, "^C", "i"); break;
    case 9: {
      bson_oid_t oid;
      bson_oid_init_from_string(&oid, "65a1b2c3d4e5f60718293a4b");
      BSON_APPEND_OID(doc, name, &oid);
      break;
    }
    case 10: {
      const uint8_t bytes[] = {1, 2, 3};
      BSON_APPEND_BINARY(doc, name, rng() % 2 ? BSON_SUBTYPE_BINARY : BSON_SUBTYPE_UUID, bytes, 3);
      break;
    }
    default: BSON_APPEND_CODE(doc, name, "function() {}"); break;
  }
}

// What extractFromDocument gives for a key of top-level fields, read the way bson_iter_init_find
// reads a document (the first element of the name).
KeyExtractStatus referenceKey(const ShardKeyPattern& pattern, const bson_t& doc, KeyPoint& out) {
  out.size = pattern.size();
  for (size_t i = 0; i < pattern.size(); ++i) {
    bson_iter_t it;
    const bool found = bson_iter_init_find(&it, &doc, pattern.field(i).path.c_str());
    if (found && BSON_ITER_HOLDS_ARRAY(&it)) return KeyExtractStatus::ArrayValue;
    if (!found && pattern.field(i).path == "_id") return KeyExtractStatus::MissingId;
    const bson_value_t* v = found ? bson_iter_value(&it) : nullptr;
    if (pattern.field(i).hashed) {
      out.fields[i] = Bound::int64(v ? hashShardKeyValue(*v) : hashNull());
    } else {
      out.fields[i] = v ? Bound::of(*v) : Bound::null();
    }
  }
  return KeyExtractStatus::Ok;
}

TEST(TargetCostPaths, KeyExtractionReadsTopLevelFieldsAsBsonIterFindDoes) {
  std::mt19937 rng(29005);
  std::vector<ShardKeyPattern> patterns;
  for (const char* json : {R"({customerId: 1, orderDate: 1})", R"({_id: 1})", R"({customerId: "hashed"})",
                           R"({region: 1, _id: "hashed"})"}) {
    std::string error;
    auto p = ShardKeyPattern::fromJson(json, error);
    ASSERT_TRUE(p) << error;
    patterns.push_back(*p);
  }
  static const char* const kNames[] = {"customerId", "orderDate", "_id", "region", "status", "customerI", "customerIdx"};
  size_t ok = 0, refused = 0;
  for (int n = 0; n < 30000; ++n) {
    bson_t doc = BSON_INITIALIZER;
    const int elements = static_cast<int>(rng() % 6);
    for (int e = 0; e < elements; ++e) appendSome(&doc, kNames[rng() % std::size(kNames)], rng);
    for (const auto& pattern : patterns) {
      KeyPoint got, want;
      const KeyExtractStatus a = pattern.extractFromDocument(doc, got);
      const KeyExtractStatus b = referenceKey(pattern, doc, want);
      ASSERT_EQ(static_cast<int>(a), static_cast<int>(b)) << n;
      if (a != KeyExtractStatus::Ok) {
        ++refused;
        continue;
      }
      ++ok;
      ASSERT_EQ(got.size, want.size);
      for (size_t i = 0; i < got.size; ++i) {
        ASSERT_EQ(got.fields[i].value.value_type, want.fields[i].value.value_type) << n;
        ASSERT_EQ(compareBound(got.fields[i], want.fields[i]), 0) << n;
      }
    }
    bson_destroy(&doc);
  }
  EXPECT_GT(ok, 20000u);
  EXPECT_GT(refused, 2000u);
}

// ---------------------------------------------------------------- write statements


// readWriteStatement as it was, walking with bson_iter_next: the reference.
namespace former {

bool documentAt(const bson_iter_t& it, bson_t& out) {
  if (!BSON_ITER_HOLDS_DOCUMENT(&it)) return false;
  uint32_t len = 0;
  const uint8_t* data = nullptr;
  bson_iter_document(&it, &len, &data);
  return bson_init_static(&out, data, len);
}

bool isReplacementDocument(const bson_iter_t& it) {
  bson_iter_t child;
  if (!BSON_ITER_HOLDS_DOCUMENT(&it) || !bson_iter_recurse(&it, &child)) return false;
  if (!bson_iter_next(&child)) return true;
  return bson_iter_key(&child)[0] != '$';
}

WriteStatement readWriteStatement(const bson_t& statement, const char* filter_key, const char* mods_key) {
  WriteStatement s;
  bool filter_seen = false, mods_seen = false, multi_seen = false, upsert_seen = false, collation_seen = false,
       limit_seen = false;
  bool filter_ok = false;
  bson_iter_t it;
  if (bson_iter_init(&it, &statement)) {
    while (bson_iter_next(&it)) {
      const char* key = bson_iter_key(&it);
      if (!filter_seen && std::strcmp(key, filter_key) == 0) {
        filter_seen = true;
        filter_ok = documentAt(it, s.filter);
      } else if (!mods_seen && std::strcmp(key, mods_key) == 0) {
        mods_seen = true;
        s.replacement = isReplacementDocument(it) && documentAt(it, s.mods);
      } else if (!multi_seen && std::strcmp(key, "multi") == 0) {
        multi_seen = true;
        s.multi = bson_iter_as_bool(&it);
      } else if (!upsert_seen && std::strcmp(key, "upsert") == 0) {
        upsert_seen = true;
        s.upsert = bson_iter_as_bool(&it);
      } else if (!collation_seen && std::strcmp(key, "collation") == 0) {
        collation_seen = true;
        bson_t collation;
        if (documentAt(it, collation)) {
          s.has_collation = true;
          s.simple_collation = isSimpleCollation(&collation);
        }
      } else if (!limit_seen && std::strcmp(key, "limit") == 0) {
        limit_seen = true;
        s.has_limit = true;
        if (BSON_ITER_HOLDS_NUMBER(&it)) s.limit = bson_iter_as_double(&it);
        if (BSON_ITER_HOLDS_DECIMAL128(&it)) {  // by value, as mongos reads it
          bson_decimal128_t dec;
          char text[BSON_DECIMAL128_STRING];
          bson_iter_decimal128(&it, &dec);
          bson_decimal128_to_string(&dec, text);
          s.limit = std::strtod(text, nullptr);
        }
      }
    }
  }
  if (!filter_ok) bson_init(&s.filter);
  return s;
}

}  // namespace former

void appendStatementField(bson_t* doc, const char* name, std::mt19937& rng) {
  switch (rng() % 11) {
    case 0:
    case 1: {
      bson_t sub;
      BSON_APPEND_DOCUMENT_BEGIN(doc, name, &sub);
      switch (rng() % 4) {
        case 0: break;
        case 1: BSON_APPEND_UTF8(&sub, "customerId", "C0001"); break;
        case 2: {
          bson_t set;
          BSON_APPEND_DOCUMENT_BEGIN(&sub, "$set", &set);
          BSON_APPEND_INT32(&set, "a", 1);
          bson_append_document_end(&sub, &set);
          break;
        }
        default: {  // BSON_APPEND_UTF8 names its value twice (the bytes and their length): chosen once
          const char* locale = rng() % 2 ? "simple" : "fr";
          BSON_APPEND_UTF8(&sub, "locale", locale);
          break;
        }
      }
      bson_append_document_end(doc, &sub);
      break;
    }
    case 2: {
      bson_t arr;
      BSON_APPEND_ARRAY_BEGIN(doc, name, &arr);
      BSON_APPEND_INT32(&arr, "0", 1);
      bson_append_array_end(doc, &arr);
      break;
    }
    case 3: BSON_APPEND_BOOL(doc, name, rng() % 2); break;
    case 4: BSON_APPEND_INT32(doc, name, static_cast<int32_t>(rng() % 3) - 1); break;
    case 5: BSON_APPEND_INT64(doc, name, static_cast<int64_t>(rng() % 3)); break;
    case 6: BSON_APPEND_DOUBLE(doc, name, rng() % 2 ? 0.0 : (rng() % 2 ? 1.5 : 1e300)); break;
    case 7: BSON_APPEND_NULL(doc, name); break;
    case 8: BSON_APPEND_UTF8(doc, name, "x"); break;
    case 9: BSON_APPEND_UNDEFINED(doc, name); break;
    default: {
      bson_decimal128_t one;
      bson_decimal128_from_string("1", &one);
      BSON_APPEND_DECIMAL128(doc, name, &one);
      break;
    }
  }
}

TEST(TargetCostPaths, WriteStatementReadsAsTheIteratorWalkDid) {
  static const char* const kNames[] = {"q", "u", "multi", "upsert", "collation", "limit", "filter", "updateMods", "x", ""};
  std::mt19937 rng(29006);
  size_t replacements = 0, damaged = 0;
  for (int n = 0; n < 60000; ++n) {
    bson_t b = BSON_INITIALIZER;
    const int fields = static_cast<int>(rng() % 7);
    for (int f = 0; f < fields; ++f) appendStatementField(&b, kNames[rng() % std::size(kNames)], rng);
    std::vector<uint8_t> bytes(bson_get_data(&b), bson_get_data(&b) + b.len);
    bson_destroy(&b);
    if (rng() % 4 == 0 && bytes.size() > 6) {  // damaged inside; length prefix and terminator kept
      bytes[4 + rng() % (bytes.size() - 5)] = static_cast<uint8_t>(rng());
      ++damaged;
    }
    bson_t stmt;
    ASSERT_TRUE(bson_init_static(&stmt, bytes.data(), bytes.size()));
    const bool bulk = rng() % 2;
    const char* filter_key = bulk ? "filter" : "q";
    const char* mods_key = bulk ? "updateMods" : "u";
    const WriteStatement got = readWriteStatement(stmt, filter_key, mods_key);
    const WriteStatement want = former::readWriteStatement(stmt, filter_key, mods_key);
    ASSERT_EQ(got.filter.len, want.filter.len) << n;
    ASSERT_EQ(std::memcmp(bson_get_data(&got.filter), bson_get_data(&want.filter), got.filter.len), 0) << n;
    ASSERT_EQ(got.replacement, want.replacement) << n;
    if (got.replacement) {
      ++replacements;
      ASSERT_EQ(bson_get_data(&got.mods), bson_get_data(&want.mods)) << n;
      ASSERT_EQ(got.mods.len, want.mods.len) << n;
    }
    ASSERT_EQ(got.multi, want.multi) << n;
    ASSERT_EQ(got.upsert, want.upsert) << n;
    ASSERT_EQ(got.has_collation, want.has_collation) << n;
    ASSERT_EQ(got.simple_collation, want.simple_collation) << n;
    ASSERT_TRUE(got.limit == want.limit || (std::isnan(got.limit) && std::isnan(want.limit))) << n;
    ASSERT_EQ(got.has_limit, want.has_limit) << n;
  }
  EXPECT_GT(replacements, 1000u);
  EXPECT_GT(damaged, 10000u);
}

}  // namespace
}  // namespace shardscope::routing
