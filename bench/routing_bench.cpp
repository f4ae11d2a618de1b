// Routing engine micro-benchmarks: classify already-decoded commands (no wire decoding) against
// 1,000-chunk maps. Target: a single-equality find in well under 1 us. Every case also reports
// heap allocations per call (allocs/op), libbson's included; the hot path should show 0.
#include <benchmark/benchmark.h>
#include <bson/bson.h>

#include <cstdio>
#include <cstdlib>
#include <new>
#include <string>
#include <vector>

#include "protocol/command_view.h"
#include "protocol/op_msg.h"
#include "routing/routing_file.h"
#include "routing/targeting.h"

#include "tests/support/count_allocations.h"

namespace {

using namespace shardscope;

std::shared_ptr<const routing::RoutingTable> rangedTable() {
  std::string chunks;
  std::string prev = R"({"customerId": {"$minKey": 1}})";
  for (int i = 1; i < 1000; ++i) {
    char id[16];
    std::snprintf(id, sizeof id, "C%05d", i * 10);
    std::string bound = std::string(R"({"customerId": ")") + id + "\"}";
    chunks += R"({"min": )" + prev + R"(, "max": )" + bound + R"(, "shard": "shard)" + std::to_string(i % 16) + "\"},";
    prev = bound;
  }
  chunks += R"({"min": )" + prev + R"(, "max": {"customerId": {"$maxKey": 1}}, "shard": "shard0"})";
  std::string text = R"({"collections": [{"ns": "shop.orders", "key": {"customerId": 1}, "chunks": [)" + chunks + "]}]}";
  std::string error;
  auto t = routing::parseRoutingText(text, false, "bench", error);
  if (!t) std::fprintf(stderr, "%s\n", error.c_str());
  return t;
}

std::shared_ptr<const routing::RoutingTable> hashedTable() {
  std::string chunks;
  std::string prev = R"({"_id": {"$minKey": 1}})";
  const long double step = 18446744073709551616.0L / 1000;
  for (int i = 1; i < 1000; ++i) {
    long long v = static_cast<long long>(-9223372036854775807.0L + step * i);
    std::string bound = R"({"_id": {"$numberLong": ")" + std::to_string(v) + "\"}}";
    chunks += R"({"min": )" + prev + R"(, "max": )" + bound + R"(, "shard": "shard)" + std::to_string(i % 16) + "\"},";
    prev = bound;
  }
  chunks += R"({"min": )" + prev + R"(, "max": {"_id": {"$maxKey": 1}}, "shard": "shard0"})";
  std::string text = R"({"collections": [{"ns": "shop.events", "key": {"_id": "hashed"}, "chunks": [)" + chunks + "]}]}";
  std::string error;
  return routing::parseRoutingText(text, false, "bench", error);
}

// Owns the body bytes; the view points into them as the proxy's view points into a message.
struct Command {
  explicit Command(const char* json, const char* name, const char* db, const char* coll) {
    bson_error_t err;
    doc = bson_new_from_json(reinterpret_cast<const uint8_t*>(json), -1, &err);
    bson_init_static(&view.body, bson_get_data(doc), doc->len);
    view.setName(name);
    view.db = db;
    view.collection = coll;
  }
  ~Command() { bson_destroy(doc); }
  bson_t* doc;
  protocol::CommandView view;
};

void runTarget(benchmark::State& state, const routing::RoutingTable& table, const protocol::CommandView& view,
               routing::Targeting expected, const routing::CursorShards* cursors = nullptr) {
  uint64_t allocations = 0;
  for (auto _ : state) {
    uint64_t before = shardscope::testing::allocationsOnThisThread();
    routing::TargetResult r = routing::target(table, view, cursors, false);
    benchmark::DoNotOptimize(r);
    allocations += shardscope::testing::allocationsOnThisThread() - before;
    if (r.targeting != expected) state.SkipWithError("unexpected targeting");
  }
  state.counters["allocs/op"] = benchmark::Counter(static_cast<double>(allocations), benchmark::Counter::kAvgIterations);
}

void BM_FindSingleEquality1000Chunks(benchmark::State& state) {
  static auto table = rangedTable();
  Command cmd(R"({"find": "orders", "filter": {"customerId": "C04567"}, "limit": 10, "$db": "shop"})", "find", "shop", "orders");
  runTarget(state, *table, cmd.view, routing::Targeting::Single);
}
BENCHMARK(BM_FindSingleEquality1000Chunks);

void BM_FindHashedEquality1000Chunks(benchmark::State& state) {
  static auto table = hashedTable();
  Command cmd(R"({"find": "events", "filter": {"_id": {"$oid": "65a0000000000000000000aa"}}, "$db": "shop"})", "find", "shop",
              "events");
  runTarget(state, *table, cmd.view, routing::Targeting::Single);
}
BENCHMARK(BM_FindHashedEquality1000Chunks);

void BM_InsertOneDocument1000Chunks(benchmark::State& state) {
  static auto table = rangedTable();
  Command cmd(R"({"insert": "orders", "documents": [{"_id": 1, "customerId": "C07777", "total": 12.5}], "$db": "shop"})",
              "insert", "shop", "orders");
  runTarget(state, *table, cmd.view, routing::Targeting::Single);
}
BENCHMARK(BM_InsertOneDocument1000Chunks);

void BM_FindRangeBounds1000Chunks(benchmark::State& state) {
  static auto table = rangedTable();
  Command cmd(R"({"find": "orders", "filter": {"customerId": {"$gte": "C01000", "$lt": "C01100"}}, "$db": "shop"})", "find",
              "shop", "orders");
  runTarget(state, *table, cmd.view, routing::Targeting::Multi);
}
BENCHMARK(BM_FindRangeBounds1000Chunks);

void BM_FindBroadcast1000Chunks(benchmark::State& state) {
  static auto table = rangedTable();
  Command cmd(R"({"find": "orders", "filter": {"status": "open"}, "$db": "shop"})", "find", "shop", "orders");
  runTarget(state, *table, cmd.view, routing::Targeting::Broadcast);
}
BENCHMARK(BM_FindBroadcast1000Chunks);

// ---- the proxy's common commands against a compound key, as real OP_MSG messages ----

// shop.orders on {customerId: 1, orderDate: 1}, 1,000 chunks over 16 shards.
std::shared_ptr<const routing::RoutingTable> compoundTable() {
  std::string chunks;
  std::string prev = R"({"customerId": {"$minKey": 1}, "orderDate": {"$minKey": 1}})";
  for (int i = 1; i < 1000; ++i) {
    char id[16];
    std::snprintf(id, sizeof id, "C%05d", i * 10);
    std::string bound = std::string(R"({"customerId": ")") + id + R"(", "orderDate": {"$minKey": 1}})";
    chunks += R"({"min": )" + prev + R"(, "max": )" + bound + R"(, "shard": "shard)" + std::to_string(i % 16) + "\"},";
    prev = bound;
  }
  chunks += R"({"min": )" + prev + R"(, "max": {"customerId": {"$maxKey": 1}, "orderDate": {"$maxKey": 1}}, "shard": "shard0"})";
  std::string text =
      R"({"collections": [{"ns": "shop.orders", "key": {"customerId": 1, "orderDate": 1}, "chunks": [)" + chunks + "]}]}";
  std::string error;
  auto t = routing::parseRoutingText(text, false, "bench", error);
  if (!t) std::fprintf(stderr, "%s\n", error.c_str());
  return t;
}

std::vector<uint8_t> bsonBytes(const std::string& json) {
  bson_error_t err;
  bson_t* doc = bson_new_from_json(reinterpret_cast<const uint8_t*>(json.data()), static_cast<ssize_t>(json.size()), &err);
  if (!doc) std::fprintf(stderr, "bad JSON: %s\n", err.message);
  std::vector<uint8_t> out;
  if (doc) out.assign(bson_get_data(doc), bson_get_data(doc) + doc->len);
  bson_destroy(doc);
  return out;
}

// An OP_MSG encoded, decoded and viewed the way the proxy sees a client request.
struct WireCommand {
  explicit WireCommand(const std::string& body_json, const char* sequence = nullptr,
                       const std::vector<std::string>& documents = {}) {
    std::vector<uint8_t> body = bsonBytes(body_json), docs;
    for (const auto& d : documents) {
      auto b = bsonBytes(d);
      docs.insert(docs.end(), b.begin(), b.end());
    }
    std::vector<protocol::DocumentSequence> sequences;
    if (sequence) sequences.push_back({sequence, docs});
    protocol::encodeOpMsg({0, 1, 0, 0}, 0, body, sequences, bytes);
    if (!protocol::decodeOpMsg(bytes, msg).ok() || !protocol::buildCommandView(msg, view).ok())
      std::fprintf(stderr, "bad command: %s\n", body_json.c_str());
  }
  std::vector<uint8_t> bytes;
  protocol::OpMsg msg;
  protocol::CommandView view;
};

#define DATE_2024 R"({"$date": "2024-03-01T00:00:00Z"})"

void BM_CompoundFindPrefixEquality(benchmark::State& state) {
  static auto table = compoundTable();
  WireCommand cmd(R"({"find": "orders", "filter": {"customerId": "C04567"}, "limit": 10, "$db": "shop"})");
  runTarget(state, *table, cmd.view, routing::Targeting::Single);
}
BENCHMARK(BM_CompoundFindPrefixEquality);

void BM_CompoundFindIn3(benchmark::State& state) {
  static auto table = compoundTable();
  WireCommand cmd(R"({"find": "orders", "filter": {"customerId": {"$in": ["C00042", "C04567", "C09001"]}}, "$db": "shop"})");
  runTarget(state, *table, cmd.view, routing::Targeting::Multi);
}
BENCHMARK(BM_CompoundFindIn3);

void BM_CompoundFindRange(benchmark::State& state) {
  static auto table = compoundTable();
  WireCommand cmd(R"({"find": "orders", "filter": {"customerId": {"$gte": "C01000", "$lt": "C01100"}}, "$db": "shop"})");
  runTarget(state, *table, cmd.view, routing::Targeting::Multi);
}
BENCHMARK(BM_CompoundFindRange);

void BM_CompoundFindNoFilter(benchmark::State& state) {
  static auto table = compoundTable();
  WireCommand cmd(R"({"find": "orders", "$db": "shop"})");
  runTarget(state, *table, cmd.view, routing::Targeting::Broadcast);
}
BENCHMARK(BM_CompoundFindNoFilter);

void BM_CompoundInsertSequence(benchmark::State& state) {
  static auto table = compoundTable();
  WireCommand cmd(R"({"insert": "orders", "$db": "shop"})", "documents",
                  {R"({"_id": 1, "customerId": "C07777", "orderDate": )" DATE_2024 R"(, "total": 12.5})"});
  runTarget(state, *table, cmd.view, routing::Targeting::Single);
}
BENCHMARK(BM_CompoundInsertSequence);

void BM_CompoundUpdateSequence(benchmark::State& state) {
  static auto table = compoundTable();
  WireCommand cmd(R"({"update": "orders", "$db": "shop"})", "updates",
                  {R"({"q": {"customerId": "C07777", "orderDate": )" DATE_2024 R"(}, "u": {"$set": {"status": "paid"}}})"});
  runTarget(state, *table, cmd.view, routing::Targeting::Single);
}
BENCHMARK(BM_CompoundUpdateSequence);

void BM_CompoundDeleteByPrefix(benchmark::State& state) {
  static auto table = compoundTable();
  WireCommand cmd(R"({"delete": "orders", "deletes": [{"q": {"customerId": "C04567"}, "limit": 1}], "$db": "shop"})");
  runTarget(state, *table, cmd.view, routing::Targeting::Single);
}
BENCHMARK(BM_CompoundDeleteByPrefix);

void BM_CompoundAggregateMatch(benchmark::State& state) {
  static auto table = compoundTable();
  WireCommand cmd(
      R"({"aggregate": "orders", "pipeline": [{"$match": {"customerId": "C04567"}}, {"$group": {"_id": "$status"}}], "cursor": {}, "$db": "shop"})");
  runTarget(state, *table, cmd.view, routing::Targeting::Single);
}
BENCHMARK(BM_CompoundAggregateMatch);

void BM_CompoundCount(benchmark::State& state) {
  static auto table = compoundTable();
  WireCommand cmd(R"({"count": "orders", "query": {"customerId": "C04567"}, "$db": "shop"})");
  runTarget(state, *table, cmd.view, routing::Targeting::Single);
}
BENCHMARK(BM_CompoundCount);

void BM_GetMoreKnownCursor(benchmark::State& state) {
  static auto table = compoundTable();
  static routing::CursorShards cursors;
  routing::ShardSet shards;
  shards.set(1);
  shards.set(4);
  cursors.remember(4242, shards);
  WireCommand cmd(R"({"getMore": {"$numberLong": "4242"}, "collection": "orders", "$db": "shop"})");
  runTarget(state, *table, cmd.view, routing::Targeting::Multi, &cursors);
}
BENCHMARK(BM_GetMoreKnownCursor);

}  // namespace

BENCHMARK_MAIN();
