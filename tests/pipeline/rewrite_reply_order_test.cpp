// A complete reply (the client's own find of an order, exhausted at once) settles the order
// outright. Replies on different connections arrive in any order, so a read the server ran before
// another connection's insert may answer after it: settling the order as that read saw it forgot
// the line just inserted, and the rewrite then answered part of the order. A complete reply whose
// values changed state while it was in flight now teaches only document by document; and a read
// from a secondary or of a majority snapshot (older than writes already answered) is never complete.
#include <gtest/gtest.h>

#include <optional>

#include "tests/pipeline/pipeline_support.h"

namespace shardscope::pipeline::testing {
namespace {

class RewriteReplyOrderTest : public ::testing::Test {
 protected:
  RewriteReplyOrderTest() {
    env.table = routing::testing::loadData("orders_6shards.json");
    env.rule = orderRule();
  }
  // The customer a plain find of O1 is rewritten with (none: sent as written); answered with nothing.
  std::optional<std::string> orderOneRewrittenWith(Connection& conn, int32_t id) {
    auto sent = request(R"({"find": "orders", "filter": {"orderId": "O1"}, "$db": "shop"})", id);
    const std::string body = bodyJson(conn.send(sent).to_upstream);
    auto back = reply(cursorReply(0, "firstBatch", ""), id);
    conn.receive(back);
    const std::string marker = R"("customerId" : ")";
    const size_t at = body.find(marker);
    if (at == std::string::npos) return std::nullopt;
    return body.substr(at + marker.size(), body.find('"', at + marker.size()) - at - marker.size());
  }
  FakeEnvironment env;
  routing::CursorShards cursors;
};

TEST_F(RewriteReplyOrderTest, ACompleteReplyOvertakenByAnInsertDoesNotSettleTheOrder) {
  Connection reader(env, &cursors), writer(env, &cursors);
  auto find = request(R"({"find": "orders", "filter": {"orderId": "O1"}, "$db": "shop"})", 1);
  reader.send(find);  // the server runs it first: it sees line 1 only
  auto insert = request(R"({"insert": "orders", "documents": [{"_id": 2, "orderId": "O1", "customerId": "C2"}], "$db": "shop"})", 2);
  writer.send(insert);
  auto inserted = reply(R"({"n": 1, "ok": 1.0})", 2);
  writer.receive(inserted);
  auto found = reply(cursorReply(0, "firstBatch", R"({"_id": 1, "orderId": "O1", "customerId": "C1"})"), 1);
  reader.receive(found);  // ...and answers last
  // The order has a C1 line and a C2 line: no customer speaks for it.
  EXPECT_EQ(orderOneRewrittenWith(reader, 3), std::nullopt);
}

// updateMany({orderId: O1}, {$set: {customerId: C2}}) settles O1 at C2 once its reply confirms a
// match. An insert of an O1 line on another connection answered while the update was in flight
// may have run after the update passed: that line keeps C1, and the order is split.
TEST_F(RewriteReplyOrderTest, AnUpdateManyOvertakenByAnInsertDoesNotSettleTheOrder) {
  env.rule = orderRule({R"({"orderId": "O1", "customerId": "C1"})"});
  Connection updater(env, &cursors), writer(env, &cursors);
  auto update = request(
      R"({"update": "orders", "updates": [{"q": {"orderId": "O1"}, "u": {"$set": {"customerId": "C2"}}, "multi": true}], "$db": "shop"})", 1);
  updater.send(update);
  auto insert = request(R"({"insert": "orders", "documents": [{"_id": 3, "orderId": "O1", "customerId": "C1"}], "$db": "shop"})", 2);
  writer.send(insert);
  auto inserted = reply(R"({"n": 1, "ok": 1.0})", 2);
  writer.receive(inserted);
  auto updated = reply(R"({"n": 2, "nModified": 2, "ok": 1.0})", 1);
  updater.receive(updated);
  EXPECT_EQ(orderOneRewrittenWith(updater, 3), std::nullopt) << "lines of C1 and C2: no customer speaks for O1";
}

// The same for a complete read of an order already unsettled (a line moved): an insert into it
// answered while the read was in flight is a line the read may not show.
TEST_F(RewriteReplyOrderTest, ACompleteReplyOvertakenByAnInsertIntoAnUnsettledOrderDoesNotSettleIt) {
  env.rule = orderRule({R"({"orderId": "O1", "customerId": "C1"})"});
  Connection reader(env, &cursors), writer(env, &cursors);
  auto move = request(R"({"update": "orders", "updates": [{"q": {"orderId": "O1", "line": 1}, "u": {"$set": {"customerId": "C2"}}}], "$db": "shop"})", 1);
  writer.send(move);
  auto moved = reply(R"({"n": 1, "nModified": 1, "ok": 1.0})", 1);
  writer.receive(moved);
  ASSERT_EQ(orderOneRewrittenWith(reader, 2), std::nullopt) << "unsettled by the line move";
  auto find = request(R"({"find": "orders", "filter": {"orderId": "O1"}, "$db": "shop"})", 3);
  reader.send(find);  // the server runs it first: it sees line 1 only
  auto insert = request(R"({"insert": "orders", "documents": [{"_id": 2, "orderId": "O1", "line": 2, "customerId": "C9"}], "$db": "shop"})", 4);
  writer.send(insert);
  auto inserted = reply(R"({"n": 1, "ok": 1.0})", 4);
  writer.receive(inserted);
  auto found = reply(cursorReply(0, "firstBatch", R"({"_id": 1, "orderId": "O1", "line": 1, "customerId": "C2"})"), 3);
  reader.receive(found);
  EXPECT_EQ(orderOneRewrittenWith(reader, 5), std::nullopt) << "lines of C2 and C9: no customer speaks for O1";
}

TEST_F(RewriteReplyOrderTest, ReadsThatMayLagAreNeverComplete) {
  for (const char* options : {R"("$readPreference": {"mode": "secondaryPreferred"})",
                              R"("readConcern": {"level": "majority"})", R"("readConcern": {"level": "snapshot"})"}) {
    env.rule = orderRule({R"({"orderId": "O1", "customerId": "C1"})", R"({"orderId": "O1", "customerId": "C2"})"});
    Connection conn(env, &cursors);
    ASSERT_EQ(orderOneRewrittenWith(conn, 1), std::nullopt) << "ambiguous to begin with";
    auto find = request(std::string(R"({"find": "orders", "filter": {"orderId": "O1"}, )") + options + R"(, "$db": "shop"})", 2);
    conn.send(find);
    auto found = reply(cursorReply(0, "firstBatch", R"({"_id": 1, "orderId": "O1", "customerId": "C1"})"), 2);
    conn.receive(found);
    EXPECT_EQ(orderOneRewrittenWith(conn, 3), std::nullopt) << options;
  }
  // The primary's own latest data is: the same read without those options settles the order.
  Connection conn(env, &cursors);
  auto find = request(R"({"find": "orders", "filter": {"orderId": "O1"}, "$readPreference": {"mode": "primary"}, "$db": "shop"})", 4);
  conn.send(find);
  auto found = reply(cursorReply(0, "firstBatch", R"({"_id": 1, "orderId": "O1", "customerId": "C1"})"), 4);
  conn.receive(found);
  EXPECT_EQ(orderOneRewrittenWith(conn, 5), "C1");
}

}  // namespace
}  // namespace shardscope::pipeline::testing
