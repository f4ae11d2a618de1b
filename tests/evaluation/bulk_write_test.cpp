// bulkWrite (mongos 8.0, run on admin; pymongo's client.bulk_write) is evaluated as the commands
// its ops stand for, each under the namespace it writes: its inserts feed the key's cardinality
// and monotonicity, its updates and deletes the read/write distribution. Before, the evaluation
// skipped it and statistics filed it under "admin".
#include <gtest/gtest.h>

#include <functional>
#include <regex>
#include <string>
#include <utility>
#include <vector>

#include "common/command_namespace.h"
#include "protocol/reply_facts.h"
#include "tests/evaluation/scenario_support.h"

namespace shardscope::evaluation {
namespace {

using testing::OwnedCommand;

bson_t* bulkJson(const std::string& json) {
  bson_error_t error;
  bson_t* b = bson_new_from_json(reinterpret_cast<const uint8_t*>(json.data()), static_cast<ssize_t>(json.size()), &error);
  EXPECT_TRUE(b) << error.message << " in " << json;
  return b;
}

std::string bulkOrder(int i) {
  return R"({"_id": )" + std::to_string(i) + R"(, "customerId": "C)" + std::to_string(1000 + i % 37) +
         R"(", "orderDate": {"$date": )" + std::to_string(1700000000000LL + i * 1000LL) + "}}";
}

// The evaluation's JSON with its clock readings left out, and each shape's `commands`: a bulkWrite's
// ops are statements of the bulkWrite command, which /stats counts under its own id (so 0 commands
// under the update's or delete's), where the separate commands count one each.
std::string bulkEvaluationOf(const std::function<void(Observer&)>& traffic) {
  EvaluationOptions o;
  o.flush_every_ms = 3'600'000;
  Evaluator ev(o);
  auto obs = ev.newObserver();
  traffic(*obs);
  obs->flush();
  static const std::regex clock(
      R"re("seconds":[0-9.e+-]+|[0-9]{16}|"(writesPerSecond|insertedBytesPerSecond)":[0-9.e+-]+|"commands":[0-9]+|"observedSince":"[^"]*")re");
  return std::regex_replace(ev.renderJson(), clock, "_");
}

TEST(BulkWriteEvaluation, IsTheEvaluationOfTheCommandsItsOpsStandFor) {
  std::string ops, docs;
  for (int i = 0; i < 300; ++i) {
    ops += (i ? ", " : "") + std::string(R"({"insert": 1, "document": )") + bulkOrder(i) + "}";
    docs += (i ? ", " : "") + bulkOrder(i);
  }
  ops += R"(, {"update": 1, "filter": {"customerId": "C1003"}, "updateMods": {"$set": {"status": "paid"}}})";
  ops += R"(, {"update": 1, "filter": {"status": "new"}, "updateMods": {"$set": {"status": "old"}}, "multi": true, "upsert": false})";
  ops += R"(, {"delete": 1, "filter": {"customerId": "C1004"}, "multi": true})";
  ops += R"(, {"delete": 1, "filter": {"_id": 7}})";
  ops += R"(, {"insert": 0, "document": {"_id": 1, "sku": "A"}})";
  ops += R"(, {"insert": 5, "document": {"_id": 2}})";  // no such nsInfo entry: mongos refuses it
  const std::string bulk = R"({"bulkWrite": 1, "ops": [)" + ops +
                           R"(], "nsInfo": [{"ns": "shop.items"}, {"ns": "shop.orders"}], "$db": "admin"})";

  const std::string viaBulkWrite = bulkEvaluationOf([&](Observer& obs) {
    OwnedCommand c(bulkJson(bulk), "admin", "");
    std::string ns;
    ASSERT_EQ(common::commandNamespace(c.view(), ns), "shop.orders");  // its first op's
    obs.observe(c.view(), ns);
  });
  const std::string viaCommands = bulkEvaluationOf([&](Observer& obs) {
    for (const auto& [json, coll] : std::vector<std::pair<std::string, std::string>>{
             {R"({"insert": "orders", "documents": [)" + docs + R"(], "$db": "shop"})", "orders"},
             {R"({"update": "orders", "updates": [{"q": {"customerId": "C1003"}, "u": {"$set": {"status": "paid"}}, "multi": false}], "$db": "shop"})", "orders"},
             {R"({"update": "orders", "updates": [{"q": {"status": "new"}, "u": {"$set": {"status": "old"}}, "upsert": false, "multi": true}], "$db": "shop"})", "orders"},
             {R"({"delete": "orders", "deletes": [{"q": {"customerId": "C1004"}, "limit": 0}], "$db": "shop"})", "orders"},
             {R"({"delete": "orders", "deletes": [{"q": {"_id": 7}, "limit": 1}], "$db": "shop"})", "orders"},
             {R"({"insert": "items", "documents": [{"_id": 1, "sku": "A"}], "$db": "shop"})", "items"}}) {
      OwnedCommand c(bulkJson(json), "shop", coll);
      obs.observe(c.view(), c.ns());
    }
  });
  EXPECT_NE(viaBulkWrite.find("\"shop.orders\""), std::string::npos) << viaBulkWrite;
  EXPECT_NE(viaBulkWrite.find("\"shop.items\""), std::string::npos) << viaBulkWrite;
  EXPECT_EQ(viaBulkWrite, viaCommands);
}

// Sends `json` (and its reply, when given) through the observer as the proxy does.
void bulkSend(Observer& obs, const std::string& json, const std::string& db, const std::string& coll,
              const std::string& reply) {
  OwnedCommand c(bulkJson(json), db, coll);
  std::string ns;
  const ReplyTicket ticket = obs.observe(c.view(), common::commandNamespace(c.view(), ns));
  if (reply.empty()) return;
  bson_t* r = bulkJson(reply);
  obs.onReply(ticket, protocol::readReplyFacts(r));
  bson_destroy(r);
}

// An update op that may create a document (an upsert, a replacement) is settled by its result in
// the reply's cursor, as the update command it stands for is by that command's reply: what it
// inserted (with the _id the server gave), matched or replaced, under its own namespace. A failed op
// (ok: 0) created nothing. Before, a bulkWrite's upserts were never evaluated.
TEST(BulkWriteEvaluation, UpsertsAreSettledByTheirOpsResults) {
  const std::string bulk = R"({"bulkWrite": 1, "ops": [
      {"update": 1, "filter": {"sensor": "s1", "hour": 1}, "updateMods": {"$inc": {"n": 1}}, "upsert": true},
      {"update": 1, "filter": {"sensor": "s2", "hour": 1}, "updateMods": {"$inc": {"n": 1}}, "upsert": true},
      {"insert": 0, "document": {"_id": 4, "sku": "A", "qty": 1}},
      {"update": 0, "filter": {"_id": 5}, "updateMods": {"_id": 5, "sku": "B", "qty": 3}},
      {"update": 1, "filter": {"sensor": "s3", "hour": 2}, "updateMods": {"$inc": {"n": 1}}, "upsert": true},
      {"update": 1, "filter": {"sensor": "s4", "hour": 2}, "updateMods": {"$inc": {"n": 1}}, "upsert": true}],
    "nsInfo": [{"ns": "shop.items"}, {"ns": "iot.buckets"}], "ordered": false, "$db": "admin"})";
  const std::string reply = R"({"ok": 1, "nErrors": 1, "nInserted": 1, "nUpserted": 2, "nMatched": 2, "nModified": 2,
    "nDeleted": 0, "cursor": {"id": 0, "ns": "admin.$cmd.bulkWrite", "firstBatch": [
      {"ok": 1, "idx": 0, "n": 1, "nModified": 0, "upserted": {"_id": 101}},
      {"ok": 1, "idx": 1, "n": 1, "nModified": 1},
      {"ok": 1, "idx": 2, "n": 1},
      {"ok": 1, "idx": 3, "n": 1, "nModified": 1},
      {"ok": 0, "idx": 4, "code": 11000, "codeName": "DuplicateKey", "errmsg": "dup"},
      {"ok": 1, "idx": 5, "n": 1, "nModified": 0, "upserted": {"_id": 102}}]}})";
  const std::string viaBulkWrite =
      bulkEvaluationOf([&](Observer& obs) { bulkSend(obs, bulk, "admin", "", reply); });

  auto update = [](const std::string& coll, const std::string& statement) {
    return R"({"update": ")" + coll + R"(", "updates": [)" + statement + R"(], "$db": ")" +
           (coll == "items" ? "shop" : "iot") + "\"}";
  };
  const std::string viaCommands = bulkEvaluationOf([&](Observer& obs) {
    bulkSend(obs, update("buckets", R"({"q": {"sensor": "s1", "hour": 1}, "u": {"$inc": {"n": 1}}, "upsert": true, "multi": false})"),
             "iot", "buckets", R"({"n": 1, "nModified": 0, "upserted": [{"index": 0, "_id": 101}], "ok": 1})");
    bulkSend(obs, update("buckets", R"({"q": {"sensor": "s2", "hour": 1}, "u": {"$inc": {"n": 1}}, "upsert": true, "multi": false})"),
             "iot", "buckets", R"({"n": 1, "nModified": 1, "ok": 1})");
    bulkSend(obs, R"({"insert": "items", "documents": [{"_id": 4, "sku": "A", "qty": 1}], "$db": "shop"})", "shop", "items", "");
    bulkSend(obs, update("items", R"({"q": {"_id": 5}, "u": {"_id": 5, "sku": "B", "qty": 3}, "multi": false})"), "shop",
             "items", R"({"n": 1, "nModified": 1, "ok": 1})");
    bulkSend(obs, update("buckets", R"({"q": {"sensor": "s3", "hour": 2}, "u": {"$inc": {"n": 1}}, "upsert": true, "multi": false})"),
             "iot", "buckets", R"({"n": 0, "nModified": 0, "writeErrors": [{"index": 0, "code": 11000, "errmsg": "dup"}], "ok": 1})");
    bulkSend(obs, update("buckets", R"({"q": {"sensor": "s4", "hour": 2}, "u": {"$inc": {"n": 1}}, "upsert": true, "multi": false})"),
             "iot", "buckets", R"({"n": 1, "nModified": 0, "upserted": [{"index": 0, "_id": 102}], "ok": 1})");
  });
  for (const char* expected : {R"("upserted":2)", R"("upsertsMatched":1)", R"("replacements":1)"})
    EXPECT_NE(viaBulkWrite.find(expected), std::string::npos) << expected << " in " << viaBulkWrite;
  EXPECT_EQ(viaBulkWrite, viaCommands);
}

TEST(BulkWriteEvaluation, NamespaceIsTheFirstOpsOrNoneWhenItHasNone) {
  auto nsOf = [](const std::string& json) {
    OwnedCommand c(bulkJson(json), "admin", "");
    std::string ns;
    return std::string(common::commandNamespace(c.view(), ns));
  };
  EXPECT_EQ(nsOf(R"({"bulkWrite": 1, "ops": [{"delete": 1, "filter": {}}], "nsInfo": [{"ns": "a.b"}, {"ns": "c.d"}], "$db": "admin"})"), "c.d");
  EXPECT_EQ(nsOf(R"({"bulkWrite": 1, "ops": [{"insert": 2, "document": {}}], "nsInfo": [{"ns": "a.b"}], "$db": "admin"})"), "");
  EXPECT_EQ(nsOf(R"({"bulkWrite": 1, "ops": [{"insert": "x", "document": {}}], "nsInfo": [{"ns": "a.b"}], "$db": "admin"})"), "");
  EXPECT_EQ(nsOf(R"({"bulkWrite": 1, "ops": [], "nsInfo": [{"ns": "a.b"}], "$db": "admin"})"), "");
  EXPECT_EQ(nsOf(R"({"bulkWrite": 1, "ops": [{"insert": 0, "document": {}}], "nsInfo": [{"ns": 5}], "$db": "admin"})"), "");
}

}  // namespace
}  // namespace shardscope::evaluation
