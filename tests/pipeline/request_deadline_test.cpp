// The request deadline (timeouts.request_ms) as the pending list computes it: the wait a request
// itself grants the server (maxAwaitTimeMS, maxTimeMS, writeConcern.wtimeout) comes on top, and
// each batch of an exhaust stream restarts the clock for the next one.
#include <gtest/gtest.h>

#include <chrono>
#include <thread>

#include "tests/pipeline/pipeline_support.h"

namespace shardscope::pipeline::testing {
namespace {

using DeadlineClock = std::chrono::steady_clock;
using std::chrono::milliseconds;

constexpr milliseconds kDeadlineRequestMs{1000};

// How far past `sent` the connection's request deadline lies, for one request on a fresh connection.
milliseconds deadlineAfterSending(const std::string& json) {
  FakeEnvironment env;
  routing::CursorShards cursors;
  Settings s = Connection::settings(&cursors);
  s.request_deadline = true;  // as the session sets it when timeouts.request_ms is
  Connection conn(env, s);
  auto frame = request(json, 5);
  const auto sent = DeadlineClock::now();
  conn.send(frame);
  auto due = conn.pipeline.pending().earliestDeadline(kDeadlineRequestMs);
  EXPECT_TRUE(due.has_value());
  return std::chrono::duration_cast<milliseconds>(*due - sent);
}

TEST(RequestDeadline, PlainRequestGetsTheDeadlineAlone) {
  EXPECT_LE(deadlineAfterSending(R"({"ping": 1, "$db": "admin"})"), kDeadlineRequestMs);
}

TEST(RequestDeadline, DeclaredWaitComesOnTop) {
  EXPECT_GE(deadlineAfterSending(R"({"hello": 1, "topologyVersion": {"processId": {"$oid": "000000000000000000000001"},
            "counter": 0}, "maxAwaitTimeMS": 10000, "$db": "admin"})"),
            milliseconds(10000) + kDeadlineRequestMs - milliseconds(50));
  EXPECT_GE(deadlineAfterSending(R"({"find": "c", "maxTimeMS": {"$numberLong": "5000"}, "$db": "d"})"),
            milliseconds(5000) + kDeadlineRequestMs - milliseconds(50));
  EXPECT_GE(deadlineAfterSending(R"({"getMore": {"$numberLong": "9"}, "collection": "c", "maxTimeMS": 2500.5, "$db": "d"})"),
            milliseconds(2500) + kDeadlineRequestMs - milliseconds(50));
  EXPECT_GE(deadlineAfterSending(R"({"insert": "c", "documents": [{"a": 1}], "writeConcern": {"w": "majority",
            "wtimeout": 4000}, "$db": "d"})"),
            milliseconds(4000) + kDeadlineRequestMs - milliseconds(50));
}

TEST(RequestDeadline, MeaninglessWaitsGrantNothing) {
  for (const char* json : {R"({"find": "c", "maxTimeMS": "5000", "$db": "d"})",
                           R"({"find": "c", "maxTimeMS": -5000, "$db": "d"})",
                           R"({"find": "c", "maxTimeMS": {"$numberDouble": "NaN"}, "$db": "d"})",
                           R"({"find": "c", "filter": {"maxTimeMS": 5000}, "$db": "d"})",
                           R"({"insert": "c", "documents": [{"wtimeout": 5000}], "writeConcern": {"w": 1}, "$db": "d"})"})
    EXPECT_LE(deadlineAfterSending(json), kDeadlineRequestMs) << json;
}

TEST(RequestDeadline, HugeWaitIsBoundedNotWrapped) {
  const auto d = deadlineAfterSending(R"({"find": "c", "maxTimeMS": 1e300, "$db": "d"})");
  EXPECT_GE(d, milliseconds(UINT32_MAX) - milliseconds(50));
}

TEST(RequestDeadline, EachExhaustBatchRestartsTheClock) {
  FakeEnvironment env;
  routing::CursorShards cursors;
  Connection conn(env, &cursors);
  auto getMore = request(R"({"getMore": {"$numberLong": "42"}, "collection": "c", "$db": "d"})", 5, protocol::kExhaustAllowed);
  conn.send(getMore);
  const auto first = *conn.pipeline.pending().earliestDeadline(kDeadlineRequestMs);
  std::this_thread::sleep_for(milliseconds(30));
  auto batch = reply(cursorReply(42, "nextBatch", R"({"_id": 1})"), 5, 900, protocol::kMoreToCome);
  const auto received = DeadlineClock::now();
  conn.receive(batch);
  ASSERT_EQ(conn.pipeline.pending().size(), 1u);  // the stream goes on
  const auto next = *conn.pipeline.pending().earliestDeadline(kDeadlineRequestMs);
  EXPECT_GE(next, received + kDeadlineRequestMs);
  EXPECT_GT(next, first);
}

}  // namespace
}  // namespace shardscope::pipeline::testing
