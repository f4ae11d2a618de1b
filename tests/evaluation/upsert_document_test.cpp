// The document an upsert inserts, built as the server builds it (issue 16 item 1).
#include <gtest/gtest.h>

#include <bson/bson.h>

#include <string>

#include "evaluation/upsert_document.h"

namespace shardscope::evaluation {
namespace {

struct Built {
  bool ok = false;
  std::string json;
};

// Builds from a statement {q: ..., u: ...} given as JSON; returns the new document as relaxed JSON.
Built build(const std::string& statement) {
  bson_error_t err;
  bson_t* st = bson_new_from_json(reinterpret_cast<const uint8_t*>(statement.data()), static_cast<ssize_t>(statement.size()), &err);
  EXPECT_NE(st, nullptr) << err.message;
  bson_iter_t qi, ui;
  bson_t q;
  bool has_q = false;
  if (bson_iter_init_find(&qi, st, "q") && BSON_ITER_HOLDS_DOCUMENT(&qi)) {
    uint32_t len;
    const uint8_t* data;
    bson_iter_document(&qi, &len, &data);
    has_q = bson_init_static(&q, data, len);
  }
  bool has_u = bson_iter_init_find(&ui, st, "u");
  UpsertDocumentBuilder b;
  std::string out;
  Built r;
  r.ok = b.build(has_q ? &q : nullptr, has_u ? &ui : nullptr, out);
  if (r.ok) {
    bson_t doc;
    EXPECT_TRUE(bson_init_static(&doc, reinterpret_cast<const uint8_t*>(out.data()), out.size()));
    EXPECT_TRUE(bson_validate(&doc, BSON_VALIDATE_NONE, nullptr));
    char* s = bson_as_relaxed_extended_json(&doc, nullptr);
    r.json = s ? s : "<invalid>";
    bson_free(s);
  }
  bson_destroy(st);
  return r;
}

TEST(UpsertDocument, FilterEqualitiesThenSetOnInsertThenSet) {
  auto r = build(R"({"q": {"sensorId": "s1", "bucketStart": 5, "n": {"$gt": 3}, "x": {"$eq": 7}},
                     "u": {"$set": {"last": 2, "sensorId": "s1"}, "$setOnInsert": {"created": 1, "last": 0}, "$inc": {"count": 1},
                           "$push": {"r": 1}}})");
  ASSERT_TRUE(r.ok);
  // $set wins over $setOnInsert on the same path; fields in order of first appearance.
  EXPECT_EQ(r.json, R"({ "sensorId" : "s1", "bucketStart" : 5, "x" : 7, "created" : 1, "last" : 2, "count" : 1 })");
}

TEST(UpsertDocument, DottedPathsBecomeNestedDocuments) {
  auto r = build(R"({"q": {"$and": [{"warehouseLocation.country": "DE"}, {"warehouseId": "W1"}]},
                     "u": {"$setOnInsert": {"warehouseLocation.region": "NRW", "a.b.c": 1}}})");
  ASSERT_TRUE(r.ok);
  EXPECT_EQ(r.json,
            R"({ "warehouseLocation" : { "country" : "DE", "region" : "NRW" }, "warehouseId" : "W1", "a" : { "b" : { "c" : 1 } } })");
}

TEST(UpsertDocument, ReplacementTakesTheFiltersId) {
  auto r = build(R"({"q": {"_id": 9, "k": 1}, "u": {"k": 2, "v": 3}})");
  ASSERT_TRUE(r.ok);
  EXPECT_EQ(r.json, R"({ "_id" : 9, "k" : 2, "v" : 3 })");
  r = build(R"({"q": {"_id": 9}, "u": {"_id": 9, "v": 3}})");
  EXPECT_EQ(r.json, R"({ "_id" : 9, "v" : 3 })");
}

TEST(UpsertDocument, WithIdPutsTheServersIdFirst) {
  bson_t* idDoc = BCON_NEW("_id", BCON_INT32(42));
  bson_iter_t id;
  ASSERT_TRUE(bson_iter_init_find(&id, idDoc, "_id"));
  bson_t* doc = BCON_NEW("a", BCON_INT32(1));
  std::string out;
  UpsertDocumentBuilder::withId({reinterpret_cast<const char*>(bson_get_data(doc)), doc->len}, id, out);
  bson_t built;
  ASSERT_TRUE(bson_init_static(&built, reinterpret_cast<const uint8_t*>(out.data()), out.size()));
  char* s = bson_as_relaxed_extended_json(&built, nullptr);
  EXPECT_STREQ(s, R"({ "_id" : 42, "a" : 1 })");
  bson_free(s);
  bson_destroy(idDoc);
  bson_destroy(doc);
}

// An update pipeline's upsert: the filter's equalities, then its $set/$addFields stages' literal
// values and its $unset stages (a pipeline upsert keyed by an order that sets its customer must not
// read as a customer-less, null-keyed document). Field paths, variables and expressions are not
// known, nor anything from the first stage of another kind on.
TEST(UpsertDocument, PipelineSetsItsLiteralFields) {
  auto r = build(R"({"q": {"orderId": "O1"}, "u": [{"$set": {"customerId": "C7", "total": 5, "at": "$$NOW",
                     "copy": "$orderId", "sum": {"$add": [1, 2]}, "tag": {"$literal": "$x"}}},
                     {"$addFields": {"total": 6, "orderId": "O1"}}, {"$unset": ["tag", "x.y"]}, {"$set": {"late": 1}}]})");
  ASSERT_TRUE(r.ok);
  EXPECT_EQ(r.json, R"({ "orderId" : "O1", "customerId" : "C7", "total" : 6, "late" : 1 })");
  auto literal = build(R"({"q": {"orderId": "O3"}, "u": [{"$set": {"tag": {"$literal": "$x"}}}]})");
  EXPECT_EQ(literal.json, R"({ "orderId" : "O3", "tag" : "$x" })");
  // A pipeline of another stage first sets nothing known: the filter's fields only.
  auto replaced = build(R"({"q": {"orderId": "O2"}, "u": [{"$replaceWith": {"customerId": "C8"}}, {"$set": {"a": 1}}]})");
  ASSERT_TRUE(replaced.ok);
  EXPECT_EQ(replaced.json, R"({ "orderId" : "O2" })");
}

// Client input: deep, empty, conflicting and numerous paths build a valid, bounded document.
TEST(UpsertDocument, HostilePathsStayBounded) {
  std::string set;
  for (int i = 0; i < 200; ++i) {
    std::string path = "p" + std::to_string(i % 7);
    for (int d = 0; d < 20; ++d) path += "." + std::to_string(d);
    set += (set.empty() ? "" : ", ") + std::string("\"") + path + "\": " + std::to_string(i);
  }
  auto r = build(R"({"q": {"a": 1, "a.b": 2, "..": 3, "x..y": 4, "": 5}, "u": {"$set": {)" + set + "}}}");
  ASSERT_TRUE(r.ok);
  EXPECT_LT(r.json.size(), 20000u);
  EXPECT_EQ(r.json.rfind(R"({ "a" : 1)", 0), 0u) << r.json;  // the whole value wins over a.b
}

}  // namespace
}  // namespace shardscope::evaluation
