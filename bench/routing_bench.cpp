// Routing engine micro-benchmarks: classify already-decoded commands (no wire decoding) against
// 1,000-chunk maps. Target: a single-equality find in well under 1 us.
#include <benchmark/benchmark.h>
#include <bson/bson.h>

#include <cstdio>
#include <string>
#include <vector>

#include "routing/routing_file.h"
#include "routing/targeting.h"

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
    view.name = name;
    view.db = db;
    view.collection = coll;
  }
  ~Command() { bson_destroy(doc); }
  bson_t* doc;
  protocol::CommandView view;
};

void runTarget(benchmark::State& state, const routing::RoutingTable& table, const protocol::CommandView& view,
               routing::Targeting expected) {
  for (auto _ : state) {
    routing::TargetResult r = routing::target(table, view, nullptr, false);
    benchmark::DoNotOptimize(r);
    if (r.targeting != expected) state.SkipWithError("unexpected targeting");
  }
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

}  // namespace

BENCHMARK_MAIN();
