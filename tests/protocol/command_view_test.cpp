#include "protocol/command_view.h"

#include <gtest/gtest.h>

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
