// A namespace's exported state is written, read back and merged from one list of its members
// (evaluation/namespace_state_fields.h, issue 24 item 5). Every row is set to a value of its own,
// exported (toBson), imported into an empty state (mergeBson) and compared: a row written but not
// read back, read under another key, or merged wrongly fails here, and so does a row this test
// leaves at its default (it would compare a default with a default and prove nothing).
#include <gtest/gtest.h>

#include <bson/bson.h>

#include <algorithm>
#include <set>
#include <string>
#include <vector>

#include "evaluation/key_facts.h"
#include "evaluation/namespace_state.h"
#include "evaluation/namespace_state_fields.h"
#include "evaluation/sketch_redaction.h"

namespace shardscope::evaluation {
namespace {

// A state whose field "a" has every sketch filled (inserts of strings, dates are not needed: the
// type counters are set below) and whose every counter row holds a value of its own.
NamespaceState filledState(const StateLimits& limits) {
  NamespaceState st("shop.orders", limits);
  for (int i = 0; i < 300; ++i) {
    bson_t d = BSON_INITIALIZER;
    BSON_APPEND_INT32(&d, "a", i % 7 == 0 ? 7 : 1000 + i);
    st.applyInsert(d, 1000 * i);
    bson_destroy(&d);
  }
  uint64_t next = 11;
  for (const auto& c : namespaceCounters()) st.*c.member = next++ * 1000 + 3;
  FieldState& f = st.fields.at(0);
  EXPECT_EQ(f.path, "a");
  for (const auto& c : fieldCodecs()) {
    if (c.counter) f.*c.counter = next++ * 1000 + 5;
  }
  f.ranged_shard_inserts = {1.5, 2.5, 3.5, 4.5};
  f.hashed_shard_inserts = {5.25, 6.25, 7.25, 8.25};
  return st;
}

std::unique_ptr<NamespaceState> exportedAndImported(const NamespaceState& st, const StateLimits& limits) {
  bson_t doc = BSON_INITIALIZER;
  st.toBson(&doc);
  auto into = std::make_unique<NamespaceState>("shop.orders", limits);
  std::string error;
  EXPECT_TRUE(into->mergeBson(doc, error)) << error;
  bson_destroy(&doc);
  return into;
}

TEST(NamespaceStateFields, EveryRowSurvivesExportAndImport) {
  StateLimits limits;
  const NamespaceState st = filledState(limits);
  const FieldState defaults;
  const FieldState& orig = st.fields.at(0);
  for (const auto& c : fieldCodecs()) EXPECT_FALSE(c.same(orig, defaults)) << c.name << " is not set by this test";
  for (const auto& c : namespaceCounters()) EXPECT_NE(st.*c.member, 0u) << c.name;

  auto back = exportedAndImported(st, limits);
  for (const auto& c : namespaceCounters()) EXPECT_EQ(back.get()->*c.member, st.*c.member) << c.name;
  const FieldState* f = back->field("a");
  ASSERT_NE(f, nullptr);
  for (const auto& c : fieldCodecs()) EXPECT_TRUE(c.same(orig, *f)) << c.name << " did not come back as it left";
}

// Merging the same export twice adds each counter row twice (merge as well as import use the rows).
TEST(NamespaceStateFields, MergingTwiceSumsEveryCounterRow) {
  StateLimits limits;
  const NamespaceState st = filledState(limits);
  bson_t doc = BSON_INITIALIZER;
  st.toBson(&doc);
  NamespaceState into("shop.orders", limits);
  std::string error;
  ASSERT_TRUE(into.mergeBson(doc, error)) << error;
  ASSERT_TRUE(into.mergeBson(doc, error)) << error;
  bson_destroy(&doc);
  for (const auto& c : namespaceCounters()) EXPECT_EQ(into.*c.member, 2 * st.*c.member) << c.name;
  const FieldState* f = into.field("a");
  ASSERT_NE(f, nullptr);
  for (const auto& c : fieldCodecs()) {
    if (!c.counter) continue;
    EXPECT_EQ(f->*c.counter, 2 * st.fields.at(0).*c.counter) << c.name;
  }
  EXPECT_EQ(f->ranged_shard_inserts, (std::vector<double>{3, 5, 7, 9}));
  EXPECT_EQ(f->max, st.fields.at(0).max);
  EXPECT_EQ(f->min, st.fields.at(0).min);
}

// The export's keys are what other sidecar versions read: their names and order stay as they were.
TEST(NamespaceStateFields, ExportKeysAreStable) {
  StateLimits limits;
  const NamespaceState st = filledState(limits);
  bson_t doc = BSON_INITIALIZER;
  st.toBson(&doc);
  auto keysOf = [](const bson_t& d) {
    std::vector<std::string> keys;
    bson_iter_t it;
    bson_iter_init(&it, &d);
    while (bson_iter_next(&it)) keys.push_back(bson_iter_key(&it));
    return keys;
  };
  EXPECT_EQ(keysOf(doc), (std::vector<std::string>{"ns", "shards", "inserts", "insertBytes", "reads", "writes",
                                                   "otherShapeOps", "upserted", "upsertsMatched", "replacements",
                                                   "fields", "reservoirSeen", "sampleSpan", "reservoir", "shapes"}));
  bson_iter_t it, arr;
  ASSERT_TRUE(bson_iter_init_find(&it, &doc, "fields") && bson_iter_recurse(&it, &arr) && bson_iter_next(&arr));
  uint32_t len = 0;
  const uint8_t* data = nullptr;
  bson_iter_document(&arr, &len, &data);
  bson_t field;
  ASSERT_TRUE(bson_init_static(&field, data, len));
  EXPECT_EQ(keysOf(field), (std::vector<std::string>{"path", "count", "hll", "freqTotal", "freqFloor", "freq", "distinct",
                                                     "max", "min", "newMax", "newMin", "compared", "oid", "date", "number",
                                                     "string", "other", "missing", "arrays", "ranged", "hashed"}));
  bson_destroy(&doc);
}

// A key's per-shape routing counts (KeyFacts' "c" rows) are written, read back and added from one
// list too (kShapeRoutingCounts): every counter set to its own value comes back, in the export's
// order, and adds.
TEST(NamespaceStateFields, ShapeRoutingCountsSurviveExportImportAndAdd) {
  KeyFacts k;
  k.key_json = "{\"a\": 1}";
  ShapeRouting& r = k.shapes[42];
  uint64_t next = 3;
  for (auto m : kShapeRoutingCounts) r.*m = next++ * 10 + 1;
  r.ranges = {5, 6, 7, 8};
  bson_t doc = BSON_INITIALIZER;
  k.toBson(&doc);
  KeyFacts back;
  ASSERT_TRUE(back.fromBson(doc));
  // The row as other sidecar versions read it: used, single, multi, scatter, shards, targetedShards,
  // targeted, withId, rewritten, afterUsed, afterScatter, afterSingle, noTarget, afterNoTarget, chunks.
  bson_iter_t it;
  ASSERT_TRUE(bson_iter_init(&it, &doc) && bson_iter_find_descendant(&it, "shapes.0.c", &it));
  bson_iter_t row;
  ASSERT_TRUE(bson_iter_recurse(&it, &row));
  std::vector<uint64_t> exported;
  while (bson_iter_next(&row)) exported.push_back(static_cast<uint64_t>(bson_iter_as_int64(&row)));
  EXPECT_EQ(exported, (std::vector<uint64_t>{r.used, r.single, r.multi, r.scatter, r.shards, r.targeted_shards,
                                             r.targeted, r.with_id, r.rewritten, r.after_used, r.after_scatter,
                                             r.after_single, r.no_target, r.after_no_target, 5, 6, 7, 8}));
  bson_destroy(&doc);
  ASSERT_EQ(back.shapes.count(42), 1u);
  const ShapeRouting& b = back.shapes.at(42);
  for (auto m : kShapeRoutingCounts) EXPECT_EQ(b.*m, r.*m);
  EXPECT_EQ(b.ranges, r.ranges);
  ShapeRouting sum = b;
  sum.add(r);
  for (auto m : kShapeRoutingCounts) EXPECT_EQ(sum.*m, 2 * r.*m);
  EXPECT_EQ(sum.ranges, (std::vector<uint64_t>{10, 12, 14, 16}));
}

// The value-free export (sketch_redaction.cpp) keeps only keys it lists: every row of the field
// table reaches it except those that carry values, so a new row fails here until it is either
// listed there or named here as carrying values.
TEST(NamespaceStateFields, ValueFreeExportKeepsEveryRowThatCarriesNoValues) {
  const std::set<std::string> carry_values = {"distinct", "max", "min"};
  StateLimits limits;
  const NamespaceState st = filledState(limits);
  bson_t wrap = BSON_INITIALIZER, arr, nsdoc;
  bson_append_array_begin(&wrap, "namespaces", -1, &arr);
  bson_append_document_begin(&arr, "0", -1, &nsdoc);
  st.toBson(&nsdoc);
  bson_append_document_end(&arr, &nsdoc);
  bson_append_array_end(&wrap, &arr);
  char* json = bson_as_canonical_extended_json(&wrap, nullptr);
  const std::string redacted = sketchesWithoutValues(json);
  bson_free(json);
  bson_destroy(&wrap);
  bson_error_t err;
  bson_t* doc = bson_new_from_json(reinterpret_cast<const uint8_t*>(redacted.data()),
                                   static_cast<ssize_t>(redacted.size()), &err);
  ASSERT_NE(doc, nullptr) << err.message;
  bson_iter_t it;
  for (const auto& c : namespaceCounters()) {
    EXPECT_TRUE(bson_iter_init(&it, doc) && bson_iter_find_descendant(&it, (std::string("namespaces.0.") + c.name).c_str(), &it))
        << c.name << " is dropped by the value-free export";
  }
  for (const auto& c : fieldCodecs()) {
    const std::string path = std::string("namespaces.0.fields.0.") + c.name;
    const bool kept = bson_iter_init(&it, doc) && bson_iter_find_descendant(&it, path.c_str(), &it);
    EXPECT_EQ(kept, carry_values.count(c.name) == 0) << c.name;
  }
  bson_destroy(doc);
}

}  // namespace
}  // namespace shardscope::evaluation
