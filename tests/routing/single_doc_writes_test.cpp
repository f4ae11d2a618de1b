// Single-document writes against mongos' rules, per version (mongo-semantics.md B "Writes"):
// - an _id equality is exact only under the collection's default collation when the _id value is
//   collatable (the pre-7.1 error: "exact match on _id (and have the collection default collation)");
// - a replacement whose shard key cannot be extracted fails ("Failed to target update by
//   replacement document");
// - on 7.1+ an upsert replacement with an exact _id is targeted by the replacement's key;
// - a delete's limit reads as a double and must be 0 or 1 (FailedToParse), multi = (limit == 0).
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>
#include <string>

#include "routing/mongos_version.h"
#include "routing/routing_file.h"
#include "routing/targeting.h"
#include "tests/routing/routing_test_util.h"

namespace shardscope::routing {
namespace {

using testing::loadData;
using testing::TestCommand;

#define D2024 R"({"$date": "2024-03-01T00:00:00Z"})"

const MongosVersion kBefore71[] = {{6, 0}, {7, 0}};
const MongosVersion kFrom71[] = {{7, 1}, {8, 0}, {}};  // unknown applies the 7.1+ rules

// shop.orders ({customerId: 1, orderDate: 1}, C0100 on shardA), its default collation simple or fr.
std::shared_ptr<const RoutingTable> orders(bool french_default) {
  if (!french_default) return loadData("orders_6shards.json");
  std::ifstream in(testing::dataPath("orders_6shards.json"));
  std::stringstream ss;
  ss << in.rdbuf();
  std::string text = ss.str();
  const std::string null_default = R"("defaultCollation": null)";
  text.replace(text.find(null_default), null_default.size(), R"("defaultCollation": {"locale": "fr"})");
  std::string error;
  auto t = parseRoutingText(text, false, "orders fr", error);
  EXPECT_TRUE(t) << error;
  return t;
}

TargetResult targetAt(const std::string& command, MongosVersion v, bool french_default = false) {
  auto table = orders(french_default);
  TestCommand cmd(command);
  TargetOptions o;
  o.mongos_version = v;
  return target(*table, cmd.view, nullptr, o);
}

bool has(const TargetResult& r, const char* text) { return std::string(r.reason).find(text) != std::string::npos; }

// One update statement (fields inside the statement document), and one delete.
std::string update(const std::string& stmt) {
  return R"({"update": "orders", "updates": [{)" + stmt + R"(}], "$db": "shop"})";
}
std::string deleteOne(const std::string& stmt) {
  return R"({"delete": "orders", "deletes": [{)" + stmt + R"(}], "$db": "shop"})";
}

constexpr const char* kExactIdBroadcast = "by exact _id";
constexpr const char* kFr = R"("collation": {"locale": "fr"})";
constexpr const char* kSet = R"("u": {"$set": {"s": 1}})";
constexpr const char* kReplaceC0100 = R"("u": {"customerId": "C0100", "orderDate": )" D2024 R"(})";

// ---------------------------------------------------------------- exact _id and collation

TEST(ExactIdCollation, CollatableIdUnderAnotherCollationIsNotExact) {
  const std::string op = update(R"("q": {"_id": "abc"}, )" + std::string(kSet) + ", " + kFr);
  const std::string del = deleteOne(R"("q": {"_id": "abc"}, "limit": 1, )" + std::string(kFr));
  const std::string doc_id = update(R"("q": {"_id": {"a": "x"}}, )" + std::string(kSet) + ", " + kFr);
  for (MongosVersion v : kBefore71) {
    TargetResult u = targetAt(op, v), d = targetAt(del, v), doc = targetAt(doc_id, v);
    EXPECT_TRUE(u.refused && has(u, "InvalidOptions")) << v.str() << " | " << u.reason;
    EXPECT_TRUE(d.refused && has(d, "ShardKeyNotFound")) << v.str() << " | " << d.reason;
    EXPECT_TRUE(doc.refused && has(doc, "InvalidOptions")) << v.str() << " | " << doc.reason;
  }
  for (MongosVersion v : kFrom71) {
    for (const std::string* c : {&op, &del, &doc_id}) {
      TargetResult r = targetAt(*c, v);
      EXPECT_FALSE(r.refused) << v.str() << " | " << *c;
      EXPECT_EQ(targetingName(r.targeting), "broadcast") << v.str();
      EXPECT_TRUE(has(r, "two-phase")) << v.str() << " | " << r.reason;
    }
  }
}

// 7.1+ targets a replacement by its own key only with an exact _id: a collated string _id is not.
TEST(ExactIdCollation, ReplacementWithCollatedStringIdRunsTwoPhaseFrom71) {
  const std::string c = update(R"("q": {"_id": "abc"}, )" + std::string(kReplaceC0100) + ", " + kFr);
  for (MongosVersion v : kFrom71) {
    TargetResult r = targetAt(c, v);
    EXPECT_EQ(targetingName(r.targeting), "broadcast") << v.str() << " | " << r.reason;
    EXPECT_TRUE(has(r, "two-phase")) << v.str() << " | " << r.reason;
  }
  // Before 7.1 the replacement's key is used, but under fr its string customerId cannot name one
  // chunk (findIntersectingChunk: "Cannot target single shard due to collation of key").
  for (MongosVersion v : kBefore71) {
    TargetResult r = targetAt(c, v);
    EXPECT_TRUE(r.refused && has(r, "collation of key")) << v.str() << " | " << r.reason;
  }
}

// Numbers, ObjectIds and dates do not collate; no collation, or the default's, leaves _id exact.
TEST(ExactIdCollation, StillExactWhenTheIdDoesNotCollateOrTheCollationIsTheDefault) {
  const std::string fr = std::string(", ") + kFr;
  const std::string cases[] = {
      update(R"("q": {"_id": 5}, )" + std::string(kSet) + fr),
      update(R"("q": {"_id": {"$oid": "650000000000000000000000"}}, )" + std::string(kSet) + fr),
      deleteOne(R"("q": {"_id": )" D2024 R"(}, "limit": 1)" + fr),
      update(R"("q": {"_id": "abc"}, )" + std::string(kSet)),
      update(R"("q": {"_id": "abc"}, )" + std::string(kSet) + R"(, "collation": {"locale": "simple"})"),
      update(R"("q": {"_id": "abc"}, )" + std::string(kSet) + R"(, "collation": {})"),
  };
  for (MongosVersion v : {MongosVersion{7, 0}, MongosVersion{8, 0}}) {
    for (const std::string& c : cases) {
      TargetResult r = targetAt(c, v);
      EXPECT_FALSE(r.refused) << v.str() << " | " << c << " | " << r.reason;
      EXPECT_TRUE(has(r, kExactIdBroadcast)) << v.str() << " | " << c << " | " << r.reason;
    }
  }
}

// Under a non-simple collection default, a statement without a collation (or with the same one)
// keeps a string _id exact; the simple collation or another locale does not.
TEST(ExactIdCollation, ComparedWithTheCollectionDefault) {
  const std::string base = R"("q": {"_id": "abc"}, )" + std::string(kSet);
  for (const std::string& extra : {std::string(), std::string(", ") + kFr}) {
    TargetResult r = targetAt(update(base + extra), {7, 0}, true);
    EXPECT_FALSE(r.refused) << extra << " | " << r.reason;
    EXPECT_TRUE(has(r, kExactIdBroadcast)) << extra << " | " << r.reason;
  }
  for (const char* other : {R"(, "collation": {"locale": "simple"})", R"(, "collation": {"locale": "de"})"}) {
    TargetResult old = targetAt(update(base + other), {7, 0}, true);
    EXPECT_TRUE(old.refused && has(old, "InvalidOptions")) << other << " | " << old.reason;
    TargetResult now = targetAt(update(base + other), {8, 0}, true);
    EXPECT_TRUE(has(now, "two-phase")) << other << " | " << now.reason;
  }
}

TEST(ExactIdCollation, BulkWriteOpsToo) {
  const std::string c = R"({"bulkWrite": 1, "ops": [{"update": 0, "filter": {"_id": "abc"},
      "updateMods": {"$set": {"s": 1}}, "collation": {"locale": "fr"}}], "nsInfo": [{"ns": "shop.orders"}], "$db": "admin"})";
  TargetResult r = targetAt(c, {8, 0});
  EXPECT_TRUE(has(r, "two-phase")) << r.reason;
  TargetResult old = targetAt(c, {7, 0});
  EXPECT_TRUE(old.refused) << old.reason;
}

// ---------------------------------------------------------------- replacement key not extractable

TEST(ReplacementKey, ArrayValueIsRefusedAsMongosRefusesIt) {
  const std::string by_id = update(R"("q": {"_id": 5}, "u": {"customerId": ["C0100"]})");
  for (MongosVersion v : {MongosVersion{6, 0}, MongosVersion{7, 0}, MongosVersion{7, 1}, MongosVersion{8, 0},
                          MongosVersion{}}) {
    TargetResult r = targetAt(by_id, v);
    EXPECT_TRUE(r.refused) << v.str() << " | " << r.reason;
    EXPECT_EQ(targetingName(r.targeting), "unclassified");
    EXPECT_TRUE(has(r, "Failed to target update by replacement document")) << v.str() << " | " << r.reason;
    EXPECT_TRUE(has(r, "ShardKeyNotFound")) << r.reason;
  }
  // Before 7.1 every replacement is targeted by its own key, exact _id or not.
  TargetResult old = targetAt(update(R"("q": {"status": "x"}, "u": {"customerId": "C0100", "orderDate": [1]})"), {7, 0});
  EXPECT_TRUE(old.refused && has(old, "Failed to target update by replacement document")) << old.reason;
}

// ---------------------------------------------------------------- upsert replacement by exact _id

TEST(UpsertReplacementById, TargetedByTheReplacementKeyFrom71) {
  auto table = orders(false);
  const std::string c = update(R"("q": {"_id": 5}, )" + std::string(kReplaceC0100) + R"(, "upsert": true)");
  for (MongosVersion v : kFrom71) {
    TargetResult r = targetAt(c, v);
    EXPECT_FALSE(r.refused) << v.str();
    EXPECT_EQ(targetingName(r.targeting), "single") << v.str() << " | " << r.reason;
    EXPECT_EQ(testing::shardNames(*table, r.shards), std::set<std::string>{"shardA"}) << v.str();
    EXPECT_EQ(r.untargetable_upserts, 0u) << v.str();
  }
  for (MongosVersion v : kBefore71) {  // the upsert still needs the key in the query
    TargetResult r = targetAt(c, v);
    EXPECT_TRUE(r.refused && has(r, "Failed to target upsert by query")) << v.str() << " | " << r.reason;
    EXPECT_EQ(r.untargetable_upserts, 1u);
  }
  // Not exact (collated string _id) or not a replacement: still an untargetable upsert.
  for (const std::string& other :
       {update(R"("q": {"_id": "abc"}, )" + std::string(kReplaceC0100) + R"(, "upsert": true, )" + kFr),
        update(R"("q": {"_id": 5}, )" + std::string(kSet) + R"(, "upsert": true)")}) {
    TargetResult r = targetAt(other, {8, 0});
    EXPECT_EQ(targetingName(r.targeting), "broadcast") << other << " | " << r.reason;
    EXPECT_EQ(r.untargetable_upserts, 1u) << other;
  }
}

// ---------------------------------------------------------------- delete limit

TEST(DeleteLimit, OnlyZeroOrOneParse) {
  for (const char* bad : {"2", "0.5", "-1", R"({"$numberDecimal": "2"})", R"({"$numberLong": "3"})"}) {
    for (MongosVersion v : {MongosVersion{7, 0}, MongosVersion{8, 0}, MongosVersion{}}) {
      TargetResult r = targetAt(deleteOne(R"("q": {"customerId": "C0100", "orderDate": )" D2024 R"(}, "limit": )" +
                                          std::string(bad)),
                                v);
      EXPECT_TRUE(r.refused) << bad << " " << v.str() << " | " << r.reason;
      EXPECT_TRUE(has(r, "FailedToParse")) << bad << " | " << r.reason;
    }
  }
}

TEST(DeleteLimit, ReadAsMongosReadsIt) {
  // Numerically 1: a single delete, refused before 7.1 without key or exact _id, two-phase after.
  for (const char* one : {R"({"$numberDecimal": "1"})", "1.0", R"({"$numberDecimal": "1.000"})"}) {
    const std::string c = deleteOne(R"("q": {"x": 1}, "limit": )" + std::string(one));
    TargetResult old = targetAt(c, {7, 0});
    EXPECT_TRUE(old.refused && has(old, "ShardKeyNotFound")) << one << " | " << old.reason;
    TargetResult now = targetAt(c, {8, 0});
    EXPECT_TRUE(has(now, "two-phase")) << one << " | " << now.reason;
  }
  // Not a number (or zero): a multi delete, targeted by its filter.
  for (const char* zero : {"true", "null", R"("1")", R"({"$numberDecimal": "0"})", "-0.0"}) {
    TargetResult r = targetAt(deleteOne(R"("q": {"x": 1}, "limit": )" + std::string(zero)), {7, 0});
    EXPECT_FALSE(r.refused) << zero << " | " << r.reason;
    EXPECT_EQ(targetingName(r.targeting), "broadcast") << zero;
    EXPECT_FALSE(has(r, "two-phase")) << zero << " | " << r.reason;
  }
}

}  // namespace
}  // namespace shardscope::routing
