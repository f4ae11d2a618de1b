#include "protocol/command_view.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <string>

#include "protocol/hello.h"
#include "tests/support/bson_builders.h"

namespace shardscope::protocol {
namespace {

TEST(CommandView, FindNamesItsCollectionAndDb) {
  auto bytes = testing::opMsg(R"({"find": "orders", "filter": {"orderId": 5}, "lsid": {"id": 1}, "txnNumber": 3, "$db": "shop"})");
  OpMsg msg;
  CommandView view;
  ASSERT_TRUE(decodeOpMsg(bytes, msg).ok());
  ASSERT_TRUE(buildCommandView(msg, view).ok());
  EXPECT_EQ(view.name, "find");
  EXPECT_EQ(view.db, "shop");
  EXPECT_EQ(view.collection, "orders");
  EXPECT_TRUE(view.hasLsid);
  EXPECT_TRUE(view.hasTxnNumber);
  std::string buf;
  EXPECT_EQ(view.ns(buf), "shop.orders");
}

TEST(CommandView, GetMoreCarriesCursorAndCollection) {
  auto bytes = testing::opMsg(R"({"getMore": {"$numberLong": "123456789012"}, "collection": "orders", "$db": "shop"})");
  OpMsg msg;
  CommandView view;
  ASSERT_TRUE(decodeOpMsg(bytes, msg).ok());
  ASSERT_TRUE(buildCommandView(msg, view).ok());
  EXPECT_EQ(view.collection, "orders");
  ASSERT_TRUE(view.cursorId);
  EXPECT_EQ(*view.cursorId, 123456789012);
}

TEST(CommandView, InsertExposesItsDocumentSequence) {
  auto bytes = testing::opMsg(R"({"insert": "orders", "$db": "shop"})", {{"documents", {R"({"a": 1})"}}});
  OpMsg msg;
  CommandView view;
  ASSERT_TRUE(decodeOpMsg(bytes, msg).ok());
  ASSERT_TRUE(buildCommandView(msg, view).ok());
  ASSERT_NE(view.findSequence("documents"), nullptr);
  EXPECT_EQ(view.findSequence("updates"), nullptr);
}

TEST(CommandView, CommandsWithoutCollectionOrDb) {
  OpMsg msg;
  CommandView view;
  auto ping = testing::opMsg(R"({"ping": 1, "$db": "admin"})");
  ASSERT_TRUE(decodeOpMsg(ping, msg).ok());
  ASSERT_TRUE(buildCommandView(msg, view).ok());
  EXPECT_TRUE(view.collection.empty());
  auto noDb = testing::opMsg(R"({"ping": 1})");
  ASSERT_TRUE(decodeOpMsg(noDb, msg).ok());
  EXPECT_FALSE(buildCommandView(msg, view).ok());
  auto rename = testing::opMsg(R"({"renameCollection": "a.b", "to": "a.c", "$db": "admin"})");
  ASSERT_TRUE(decodeOpMsg(rename, msg).ok());
  ASSERT_TRUE(buildCommandView(msg, view).ok());
  EXPECT_TRUE(view.collection.empty());
}

// The request path reads the body's facts while decodeOpMsg validates it (CommandViewScan): the view
// is the one read after decoding, and a body that fails validation leaves the scan incomplete.
TEST(CommandView, ReadWhileDecodingAsAfter) {
  const char* const kBodies[] = {
      R"({"find": "orders", "filter": {"orderId": 5}, "lsid": {"id": 1}, "txnNumber": 3, "$db": "shop"})",
      R"({"getMore": {"$numberLong": "42"}, "collection": "orders", "$db": "shop"})",
      R"({"update": "orders", "updates": [], "autocommit": false, "startTransaction": true, "$db": "shop"})",
      R"({"aggregate": 1, "pipeline": [], "collation": {"locale": "fr"}, "$db": "admin"})",
      R"({"ping": 1})",
      R"({"find": "a", "k1": 1, "k2": 2, "k3": 3, "k4": 4, "k5": 5, "k6": 6, "k7": 7, "k8": 8, "k9": 9, "k10": 10, "k11": 11, "k12": 12, "k13": 13, "k14": 14, "k15": 15, "k16": 16, "$db": "x"})",
  };
  for (const char* body : kBodies) {
    SCOPED_TRACE(body);
    auto bytes = testing::opMsg(body);
    OpMsg plain_msg, scanned_msg;
    CommandView plain, scanned;
    ASSERT_TRUE(decodeOpMsg(bytes, plain_msg).ok());
    const bool plain_ok = buildCommandView(plain_msg, plain).ok();
    CommandViewScan scan(scanned);
    ASSERT_TRUE(decodeOpMsg(bytes, scanned_msg, {}, &scan).ok());
    ASSERT_TRUE(scan.complete());
    EXPECT_EQ(buildCommandView(scanned_msg, scanned, &scan).ok(), plain_ok);
    if (!plain_ok) continue;
    EXPECT_EQ(scanned.name, plain.name);
    EXPECT_EQ(scanned.db, plain.db);
    EXPECT_EQ(scanned.collection, plain.collection);
    EXPECT_EQ(scanned.cursorId, plain.cursorId);
    EXPECT_EQ(scanned.hasLsid, plain.hasLsid);
    EXPECT_EQ(scanned.hasTxnNumber, plain.hasTxnNumber);
    EXPECT_EQ(scanned.inTransaction, plain.inTransaction);
    EXPECT_EQ(scanned.hasCollation, plain.hasCollation);
    EXPECT_TRUE(scanned.bodyScanned);
    ASSERT_EQ(scanned.indexedKeys, plain.indexedKeys);
    for (size_t i = 0; i < (plain.indexedKeys == CommandView::kNotIndexed ? 0 : plain.indexedKeys); ++i) {
      EXPECT_EQ(scanned.keyOffsets[i], plain.keyOffsets[i]);
      EXPECT_EQ(scanned.keyLengths[i], plain.keyLengths[i]);
    }
  }
  // A body whose key is not UTF-8: refused, and the scan says it did not see the whole body.
  auto bad = testing::opMsg(R"({"find": "orders", "$db": "shop"})");
  const std::string key = "find";
  auto at = std::search(bad.begin(), bad.end(), key.begin(), key.end());
  ASSERT_NE(at, bad.end());
  *(at + 1) = 0xff;
  OpMsg msg;
  CommandView view;
  CommandViewScan scan(view);
  EXPECT_FALSE(decodeOpMsg(bad, msg, {}, &scan).ok());
  EXPECT_FALSE(scan.complete());
}

TEST(CommandView, LegacyQueryUnwrapsDollarQuery) {
  auto bytes = testing::opQuery("admin.$cmd", R"({"$query": {"isMaster": 1, "helloOk": true}, "$readPreference": {"mode": "primary"}})");
  OpQuery q;
  ASSERT_TRUE(decodeOpQuery(bytes, q).ok());
  CommandView view;
  ASSERT_TRUE(buildCommandViewFromQuery(q.fullCollectionName, q.query, view).ok());
  EXPECT_EQ(view.name, "isMaster");
  EXPECT_EQ(view.db, "admin");
  EXPECT_FALSE(buildCommandViewFromQuery("shop.orders", q.query, view).ok());
}

// A hello starting authentication holds the first SCRAM message (the user name), and its reply the
// server's salt and nonce: it carries secrets like saslStart, however it arrives (OP_MSG, read
// while decoding or after, or the legacy OP_QUERY); a plain hello and another command's field of
// that name do not.
TEST(CommandView, HelloStartingAuthenticationCarriesSecrets) {
  const std::string start = R"({"saslStart": 1, "mechanism": "SCRAM-SHA-256",
      "payload": {"$binary": {"base64": "bixuPXU=", "subType": "00"}}, "db": "admin"})";
  auto carries = [](const std::string& body) {
    auto bytes = testing::opMsg(body);
    OpMsg plain_msg, scanned_msg;
    CommandView plain, scanned;
    EXPECT_TRUE(decodeOpMsg(bytes, plain_msg).ok());
    EXPECT_TRUE(buildCommandView(plain_msg, plain).ok());
    CommandViewScan scan(scanned);
    EXPECT_TRUE(decodeOpMsg(bytes, scanned_msg, {}, &scan).ok());
    EXPECT_TRUE(buildCommandView(scanned_msg, scanned, &scan).ok());
    EXPECT_EQ(plain.traits.carries_secrets, scanned.traits.carries_secrets) << body;
    return plain.traits.carries_secrets;
  };
  EXPECT_TRUE(carries(R"({"hello": 1, "speculativeAuthenticate": )" + start + R"(, "$db": "admin"})"));
  EXPECT_TRUE(carries(R"({"isMaster": 1, "speculativeAuthenticate": )" + start + R"(, "$db": "admin"})"));
  EXPECT_FALSE(carries(R"({"hello": 1, "$db": "admin"})"));
  EXPECT_FALSE(carries(R"({"find": "c", "speculativeAuthenticate": 1, "$db": "d"})"));
  // An explain wrapping one (the server refuses it, but the capture saw its pwd first).
  EXPECT_TRUE(carries(R"({"explain": {"createUser": "u", "pwd": "p", "roles": []}, "$db": "admin"})"));
  EXPECT_FALSE(carries(R"({"explain": {"find": "c"}, "$db": "d"})"));
  EXPECT_FALSE(carries(R"({"explain": {}, "$db": "d"})"));
  auto legacy = testing::opQuery("admin.$cmd", R"({"isMaster": 1, "speculativeAuthenticate": )" + start + "}");
  OpQuery q;
  ASSERT_TRUE(decodeOpQuery(legacy, q).ok());
  CommandView view;
  ASSERT_TRUE(buildCommandViewFromQuery(q.fullCollectionName, q.query, view).ok());
  EXPECT_TRUE(view.traits.carries_secrets);
  EXPECT_EQ(view.traits.kind, CommandKind::Hello) << "still the handshake";
}

TEST(Hello, CompressionListIsReplacedOrRemoved) {
  testing::Doc hello(R"({"hello": 1, "compression": ["snappy", "zstd", "lz4"], "client": {"a": 1}})");
  auto offered = readCompressionList(hello.get());
  ASSERT_EQ(offered.size(), 2u);
  EXPECT_EQ(offered[0], Compressor::Snappy);

  std::vector<Compressor> ours{Compressor::Zstd, Compressor::Zlib};
  EXPECT_EQ(intersectCompressors(offered, ours), std::vector<Compressor>{Compressor::Zstd});

  bson_t out = BSON_INITIALIZER;
  replaceCompressionList(hello.get(), ours, &out);
  EXPECT_EQ(testing::toJson(&out), R"({ "hello" : 1, "compression" : [ "zstd", "zlib" ], "client" : { "a" : 1 } })");
  bson_destroy(&out);

  bson_init(&out);
  replaceCompressionList(hello.get(), {}, &out);
  EXPECT_EQ(testing::toJson(&out), R"({ "hello" : 1, "client" : { "a" : 1 } })");
  bson_destroy(&out);

  testing::Doc wrapped(R"({"$query": {"isMaster": 1}, "$readPreference": {"mode": "primary"}})");
  bson_init(&out);
  replaceCompressionList(wrapped.get(), ours, &out);
  EXPECT_EQ(testing::toJson(&out),
            R"({ "$query" : { "isMaster" : 1, "compression" : [ "zstd", "zlib" ] }, "$readPreference" : { "mode" : "primary" } })");
  bson_destroy(&out);
}

TEST(OpQueryReply, RoundTrip) {
  auto bytes = testing::opQuery("admin.$cmd", R"({"isMaster": 1})");
  OpQuery q;
  ASSERT_TRUE(decodeOpQuery(bytes, q).ok());
  EXPECT_EQ(q.fullCollectionName, "admin.$cmd");
  EXPECT_EQ(q.numberToReturn, -1);
  std::vector<uint8_t> again;
  encodeOpQuery(q, again);
  EXPECT_EQ(again, bytes);

  auto doc = testing::Doc(R"({"ismaster": true, "ok": 1})").bytes();
  OpReply r;
  r.header = {0, 5, 9, 1};
  r.numberReturned = 1;
  r.documents = doc;
  std::vector<uint8_t> reply;
  encodeOpReply(r, reply);
  OpReply back;
  ASSERT_TRUE(decodeOpReply(reply, back).ok());
  EXPECT_EQ(back.header.responseTo, 9);
  EXPECT_EQ(back.numberReturned, 1);
  reply[20] = 2;  // numberReturned no longer matches the documents
  storeInt32(reply.data() + 16 + 16, 2);
  EXPECT_FALSE(decodeOpReply(reply, back).ok());
}

}  // namespace
}  // namespace shardscope::protocol
