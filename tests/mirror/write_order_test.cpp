// Replay's global write order: which commands are ordered across connections, and the gate that
// lets a write go only after every earlier-captured write is done.
#include <gtest/gtest.h>

#include <atomic>
#include <thread>
#include <vector>

#include "protocol/command_view.h"
#include "protocol/op_msg.h"
#include "shadow/write_order.h"
#include "tests/support/bson_builders.h"

namespace shardscope::shadow {
namespace {

bool ordered(const std::string& json) {
  auto bytes = testing::opMsg(json);
  protocol::OpMsg msg;
  protocol::CommandView view;
  EXPECT_TRUE(protocol::decodeOpMsg(bytes, msg).ok());
  EXPECT_TRUE(protocol::buildCommandView(msg, view).ok());
  return isOrderedWrite(view);
}

TEST(WriteOrder, WritesAndTransactionsAreOrderedReadsAreNot) {
  EXPECT_TRUE(ordered(R"({"insert": "c", "documents": [], "$db": "d"})"));
  EXPECT_TRUE(ordered(R"({"update": "c", "updates": [], "$db": "d"})"));
  EXPECT_TRUE(ordered(R"({"delete": "c", "deletes": [], "$db": "d"})"));
  EXPECT_TRUE(ordered(R"({"findAndModify": "c", "query": {}, "$db": "d"})"));
  EXPECT_TRUE(ordered(R"({"drop": "c", "$db": "d"})"));
  EXPECT_TRUE(ordered(R"({"aggregate": "c", "pipeline": [{"$out": "o"}], "cursor": {}, "$db": "d"})"));
  EXPECT_TRUE(ordered(R"({"find": "c", "autocommit": false, "$db": "d"})"));  // in a transaction
  EXPECT_TRUE(ordered(R"({"commitTransaction": 1, "$db": "admin"})"));
  EXPECT_FALSE(ordered(R"({"find": "c", "filter": {}, "$db": "d"})"));
  EXPECT_FALSE(ordered(R"({"aggregate": "c", "pipeline": [{"$match": {}}], "cursor": {}, "$db": "d"})"));
  EXPECT_FALSE(ordered(R"({"getMore": {"$numberLong": "5"}, "collection": "c", "$db": "d"})"));
  EXPECT_FALSE(ordered(R"({"hello": 1, "$db": "admin"})"));
}

TEST(WriteOrder, GateReleasesWritesInRankOrder) {
  WriteGate gate(4);
  std::vector<int> ran;
  std::mutex m;
  std::vector<std::thread> threads;
  // Started in reverse: each must still run after every lower rank.
  for (int r = 3; r >= 0; --r)
    threads.emplace_back([&, r] {
      gate.waitTurn(static_cast<size_t>(r));
      {
        std::lock_guard lock(m);
        ran.push_back(r);
      }
      gate.done(static_cast<size_t>(r));
    });
  for (auto& t : threads) t.join();
  EXPECT_EQ(ran, (std::vector<int>{0, 1, 2, 3}));
  EXPECT_EQ(gate.completed(), 4u);
}

TEST(WriteOrder, GivenUpWritesDoNotBlockLaterOnes) {
  WriteGate gate(3);
  gate.done(1);  // a failed connection gives up its write before its turn
  EXPECT_EQ(gate.completed(), 0u);
  gate.done(0);
  EXPECT_EQ(gate.completed(), 2u);
  gate.waitTurn(2);  // returns at once
  gate.done(2);
  gate.done(2);  // twice, or out of range: harmless
  gate.done(7);
  EXPECT_EQ(gate.completed(), 3u);
}

}  // namespace
}  // namespace shardscope::shadow
