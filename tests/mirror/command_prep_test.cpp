// Preparing commands for another cluster: classification, stripped per-cluster fields, cursor id
// mapping, folded sequences, and redaction that keeps equality but hides values.
#include <gtest/gtest.h>

#include "protocol/command_view.h"
#include "shadow/command_prep.h"
#include "tests/support/bson_builders.h"

namespace shardscope::shadow {
namespace {

struct View {
  explicit View(const std::string& body, const std::vector<testing::Sequence>& seqs = {})
      : bytes(testing::opMsg(body, seqs)) {
    EXPECT_TRUE(protocol::decodeOpMsg(bytes, msg).ok());
    EXPECT_TRUE(protocol::buildCommandView(msg, view).ok());
  }
  std::vector<uint8_t> bytes;
  protocol::OpMsg msg;
  protocol::CommandView view;
};

std::string foreign(const View& v, const ForeignOptions& o) {
  bson_t out = BSON_INITIALIZER;
  buildForeignCommand(v.view, o, &out);
  std::string s = testing::toJson(&out);
  bson_destroy(&out);
  return s;
}

TEST(CommandPrep, Classification) {
  EXPECT_EQ(mirrorClass(View(R"({"find": "c", "$db": "d"})").view), CommandClass::Read);
  EXPECT_EQ(mirrorClass(View(R"({"aggregate": "c", "pipeline": [{"$match": {}}], "cursor": {}, "$db": "d"})").view),
            CommandClass::Read);
  EXPECT_EQ(mirrorClass(View(R"({"aggregate": "c", "pipeline": [{"$out": "x"}], "cursor": {}, "$db": "d"})").view),
            CommandClass::Write);
  EXPECT_EQ(mirrorClass(View(R"({"insert": "c", "$db": "d"})").view), CommandClass::Write);
  EXPECT_EQ(mirrorClass(View(R"({"getMore": {"$numberLong": "5"}, "collection": "c", "$db": "d"})").view),
            CommandClass::Cursor);
  EXPECT_EQ(mirrorClass(View(R"({"find": "c", "autocommit": false, "txnNumber": 1, "$db": "d"})").view),
            CommandClass::Transaction);
  EXPECT_EQ(mirrorClass(View(R"({"commitTransaction": 1, "$db": "admin"})").view), CommandClass::Transaction);
  EXPECT_EQ(mirrorClass(View(R"({"hello": 1, "$db": "admin"})").view), CommandClass::Other);
  EXPECT_EQ(mirrorClass(View(R"({"saslStart": 1, "$db": "admin"})").view), CommandClass::Other);
}

TEST(CommandPrep, StripsPerClusterFieldsAndFoldsSequences) {
  View v(R"({"insert": "c", "ordered": true, "lsid": {"id": 1}, "txnNumber": 3, "$db": "d",
             "$clusterTime": {"clusterTime": 1}, "$readPreference": {"mode": "primary"}})",
         {{"documents", {R"({"_id": 1})", R"({"_id": 2})"}}});
  ForeignOptions o;
  o.strip_db = o.strip_session = o.fold_sequences = true;
  EXPECT_EQ(foreign(v, o), R"({ "insert" : "c", "ordered" : true, "documents" : [ { "_id" : 1 }, { "_id" : 2 } ] })");
  ForeignOptions keep;
  EXPECT_EQ(foreign(v, keep),
            R"({ "insert" : "c", "ordered" : true, "lsid" : { "id" : 1 }, "txnNumber" : 3, "$db" : "d" })");
}

TEST(CommandPrep, ReadConcernLosesClusterTimeOnly) {
  View v(R"({"find": "c", "readConcern": {"level": "majority", "afterClusterTime": {"$timestamp": {"t": 1, "i": 1}}}, "$db": "d"})");
  EXPECT_EQ(foreign(v, {}), R"({ "find" : "c", "readConcern" : { "level" : "majority" }, "$db" : "d" })");
}

TEST(CommandPrep, CursorIdsAreMapped) {
  ForeignOptions o;
  o.map_cursor = [](int64_t id) -> int64_t { return id == 5 ? 500 : 0; };
  EXPECT_EQ(foreign(View(R"({"getMore": {"$numberLong": "5"}, "collection": "c", "$db": "d"})"), o),
            R"({ "getMore" : 500, "collection" : "c", "$db" : "d" })");
  EXPECT_EQ(foreign(View(R"({"killCursors": "c", "cursors": [{"$numberLong": "5"}, {"$numberLong": "6"}], "$db": "d"})"), o),
            R"({ "killCursors" : "c", "cursors" : [ 500 ], "$db" : "d" })");
}

std::string redacted(const View& v, uint64_t salt = 1) {
  bson_t out = BSON_INITIALIZER;
  redactCommand(v.view, salt, &out);
  std::string s = testing::toJson(&out);
  bson_destroy(&out);
  return s;
}

TEST(CommandPrep, RedactionHidesValuesKeepsEqualityAndStructure) {
  View a(R"({"find": "orders", "filter": {"customerId": "C42", "total": {"$gt": 100}}, "sort": {"orderDate": -1},
             "limit": 5, "lsid": {"id": 1}, "$db": "shop"})");
  View b(R"({"find": "orders", "filter": {"customerId": "C42", "total": {"$gt": 7}}, "sort": {"orderDate": -1},
             "limit": 5, "$db": "shop"})");
  std::string ra = redacted(a), rb = redacted(b);
  EXPECT_EQ(ra.find("C42"), std::string::npos) << ra;
  EXPECT_EQ(ra.find("lsid"), std::string::npos) << ra;
  EXPECT_NE(ra.find(R"("sort" : { "orderDate" : -1 })"), std::string::npos) << ra;
  EXPECT_NE(ra.find(R"("limit" : 5)"), std::string::npos) << ra;
  EXPECT_NE(ra.find(R"("$db" : "shop")"), std::string::npos) << ra;
  // The same customer gets the same pseudonym; totals differ.
  auto pseudonym = [](const std::string& s) { auto at = s.find("\"customerId\" : \"~"); return s.substr(at, 36); };
  EXPECT_EQ(pseudonym(ra), pseudonym(rb));
  EXPECT_NE(ra, rb);
  EXPECT_NE(redacted(a, 1), redacted(a, 2));  // salted per capture
}

TEST(CommandPrep, RedactionOfWriteStatements) {
  View v(R"({"update": "c", "ordered": true, "$db": "d"})",
         {{"updates", {R"({"q": {"_id": "secret"}, "u": {"$set": {"v": "hidden"}}, "multi": true, "upsert": false})"}}});
  std::string r = redacted(v);
  EXPECT_EQ(r.find("secret"), std::string::npos) << r;
  EXPECT_EQ(r.find("hidden"), std::string::npos) << r;
  EXPECT_NE(r.find(R"("multi" : true)"), std::string::npos) << r;
  EXPECT_NE(r.find(R"("$set" : { "v" : "~)"), std::string::npos) << r;
  View ins(R"({"insert": "c", "$db": "d"})", {{"documents", {R"({"_id": {"$oid": "650000000000000000000001"}, "n": 3})"}}});
  std::string ri = redacted(ins);
  EXPECT_EQ(ri.find("650000000000000000000001"), std::string::npos) << ri;
  EXPECT_NE(ri.find(R"("_id" : { "$oid" : ")"), std::string::npos) << ri;  // type kept
}

TEST(CommandPrep, RedactionKeepsPipelineStructure) {
  View v(R"({"aggregate": "c", "pipeline": [{"$match": {"status": "A"}}, {"$group": {"_id": "$cust", "n": {"$sum": 1}}}],
             "cursor": {}, "$db": "d"})");
  std::string r = redacted(v);
  EXPECT_EQ(r.find("\"A\""), std::string::npos) << r;
  EXPECT_NE(r.find(R"("_id" : "$cust")"), std::string::npos) << r;
}

// Values beyond filters, documents and $match stages: a bulkWrite's ops (in the body or as a
// sequence), an explain's wrapped command, comments, update constants, index partial filters,
// literals of any stage (nested pipelines, $facet, $lookup, $unionWith, $merge's let) and of a
// projection. Each held its value raw in a redacted capture before.
TEST(CommandPrep, RedactionHidesValuesWhereverACommandCarriesThem) {
  const std::vector<View> commands = [] {
    std::vector<View> v;
    v.reserve(16);  // a View holds views into its own bytes: built in place, never moved
    v.emplace_back(R"({"bulkWrite": 1, "ops": [{"insert": 0, "document": {"e": "SECRET_bulk_doc"}},
        {"update": 0, "filter": {"e": "SECRET_bulk_filter"}, "updateMods": {"$set": {"e": "SECRET_bulk_mods"}}},
        {"delete": 0, "filter": {"e": "SECRET_bulk_delete"}, "multi": false}],
        "nsInfo": [{"ns": "d.people"}], "$db": "admin"})");
    v.emplace_back(R"({"bulkWrite": 1, "nsInfo": [{"ns": "d.people"}], "$db": "admin"})",
                   std::vector<testing::Sequence>{{"ops", {R"({"update": 0, "filter": {"e": 1},
                       "updateMods": {"e": "SECRET_seq_replacement"}, "upsert": true})"}}});
    v.emplace_back(R"({"explain": {"find": "people", "filter": {"e": "SECRET_explain"}}, "verbosity": "queryPlanner",
        "$db": "d"})");
    v.emplace_back(R"({"find": "people", "filter": {}, "comment": "SECRET_comment", "$db": "d"})");
    v.emplace_back(R"({"update": "people", "updates": [{"q": {}, "u": [{"$set": {"x": "$$v"}}],
        "c": {"v": "SECRET_constants"}}], "$db": "d"})");
    v.emplace_back(R"({"createIndexes": "people", "indexes": [{"key": {"e": 1}, "name": "e_1",
        "partialFilterExpression": {"e": "SECRET_partial"}}], "$db": "d"})");
    v.emplace_back(R"({"aggregate": "people", "pipeline": [
        {"$lookup": {"from": "x", "as": "y", "pipeline": [{"$match": {"e": "SECRET_lookup"}}]}},
        {"$facet": {"f": [{"$match": {"e": "SECRET_facet"}}, {"$limit": 3}]}},
        {"$unionWith": {"coll": "z", "pipeline": [{"$match": {"e": "SECRET_union"}}]}},
        {"$addFields": {"k": "SECRET_addfields", "m": {"$literal": "SECRET_literal"}}},
        {"$project": {"e": 1, "tag": {"$concat": ["$e", "SECRET_concat"]}}},
        {"$merge": {"into": "out", "on": "_id", "let": {"v": "SECRET_merge_let"}}}], "cursor": {}, "$db": "d"})");
    v.emplace_back(
        R"({"find": "people", "filter": {}, "projection": {"e": {"$eq": "SECRET_projection"}}, "$db": "d"})");
    v.emplace_back(R"({"findAndModify": "people", "query": {"e": 1}, "fields": {"e": {"$eq": "SECRET_fields"}},
        "update": {"$set": {"e": "SECRET_fam"}}, "$db": "d"})");
    return v;
  }();
  for (const auto& command : commands) {
    const std::string r = redacted(command);
    EXPECT_EQ(r.find("SECRET_"), std::string::npos) << r;
  }
  // What is structure stays: names, field paths, stage order, limits, flags, directions.
  const std::string bulk = redacted(commands[0]);
  EXPECT_NE(bulk.find(R"("nsInfo" : [ { "ns" : "d.people" } ])"), std::string::npos) << bulk;
  EXPECT_NE(bulk.find(R"("multi" : false)"), std::string::npos) << bulk;
  EXPECT_NE(bulk.find(R"("updateMods" : { "$set" : { "e" : "~)"), std::string::npos) << bulk;
  const std::string agg = redacted(commands[6]);
  EXPECT_NE(agg.find(R"("from" : "x", "as" : "y")"), std::string::npos) << agg;
  EXPECT_NE(agg.find(R"({ "$limit" : 3 })"), std::string::npos) << agg;
  EXPECT_NE(agg.find(R"("$concat" : [ "$e", "~)"), std::string::npos) << agg;
  EXPECT_NE(agg.find(R"("$project" : { "e" : 1,)"), std::string::npos) << agg;
  EXPECT_NE(agg.find(R"("into" : "out", "on" : "_id")"), std::string::npos) << agg;
  const std::string explain = redacted(commands[2]);
  EXPECT_NE(explain.find(R"("explain" : { "find" : "people", "filter" : { "e" : "~)"), std::string::npos) << explain;
  EXPECT_NE(explain.find(R"("verbosity" : "queryPlanner")"), std::string::npos) << explain;
  // Equal values stay equal across the places they appear (cardinality survives).
  View a(R"({"find": "people", "filter": {"e": "same"}, "$db": "d"})");
  View b(R"({"explain": {"find": "people", "filter": {"e": "same"}}, "$db": "d"})");
  const std::string ra = redacted(a), rb = redacted(b);
  const auto at = ra.find("\"e\" : \"~");
  ASSERT_NE(at, std::string::npos) << ra;
  EXPECT_NE(rb.find(ra.substr(at, 24)), std::string::npos) << ra << " / " << rb;
}

}  // namespace
}  // namespace shardscope::shadow
