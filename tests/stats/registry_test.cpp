// Registry and Recorder: counts per shape and class, fan-out, latency, errors, per-shard load,
// one tally per thread shared by its connections, closed connections' totals, reset, and the
// bounded shape catalog.
#include "stats/registry.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include "stats/render.h"
#include "tests/stats/json_command.h"

namespace shardscope::stats {
namespace {

struct Doc {
  explicit Doc(const std::string& json) {
    bson_error_t error;
    doc = bson_new_from_json(reinterpret_cast<const uint8_t*>(json.data()), static_cast<ssize_t>(json.size()), &error);
    EXPECT_NE(doc, nullptr) << error.message << " in " << json;
  }
  ~Doc() { bson_destroy(doc); }
  Doc(const Doc&) = delete;
  bson_t* doc;
};

using testing::Command;

routing::TargetResult target(routing::Targeting t, std::initializer_list<size_t> shards) {
  routing::TargetResult r;
  r.targeting = t;
  for (size_t s : shards) r.shards.set(s);
  return r;
}

const ShapeSnapshot* findShape(const Snapshot& snap, std::string_view command, std::string_view shape) {
  for (const auto& s : snap.shapes)
    if (s.command == command && s.shape == shape) return &s;
  return nullptr;
}

const std::string kByCustomer = R"({"customerId":"<string>"} sort:{"orderDate":-1})";
const std::string kByStatus = R"({"status":"<string>"})";

TEST(Registry, CountsPerShapeAndClass) {
  Registry registry;
  auto a = registry.newRecorder();
  auto b = registry.newRecorder();
  a->onConnectionOpen();
  b->onConnectionOpen();
  auto single = target(routing::Targeting::Single, {2});
  auto broadcast = target(routing::Targeting::Broadcast, {0, 1, 2, 3, 4, 5});
  for (int i = 0; i < 62; ++i) {
    Command c(R"({"find":"orders","filter":{"customerId":"C)" + std::to_string(i) +
              R"("},"sort":{"orderDate":-1},"$db":"shop"})");
    auto& rec = i % 2 ? a : b;
    OpHandle h = rec->onRequest(c.view, "shop.orders", single, 100);
    Doc reply(R"({"cursor":{"id":0,"ns":"shop.orders","firstBatch":[]},"ok":1})");
    rec->onReply(h, protocol::readReplyFacts(reply.doc), 200, 1'000'000);
  }
  for (int i = 0; i < 6; ++i) {
    Command c(R"({"find":"orders","filter":{"status":"pending"},"$db":"shop"})");
    OpHandle h = a->onRequest(c.view, "shop.orders", broadcast, 80);
    a->onReply(h, protocol::ReplyFacts{}, 50, 5'000'000);
  }
  Snapshot snap = registry.snapshot();
  const auto* byCustomer = findShape(snap, "find", kByCustomer);
  const auto* byStatus = findShape(snap, "find", kByStatus);
  ASSERT_NE(byCustomer, nullptr);
  ASSERT_NE(byStatus, nullptr);
  EXPECT_EQ(byCustomer->counters.count, 62u);
  EXPECT_EQ(byCustomer->counters.byTargeting[0], 62u);
  EXPECT_EQ(byCustomer->counters.fanout.max, 1u);
  EXPECT_EQ(byCustomer->counters.bytesIn, 6200u);
  EXPECT_EQ(byCustomer->counters.bytesOut, 12400u);
  EXPECT_EQ(byCustomer->counters.latency.total(), 62u);
  EXPECT_EQ(byStatus->counters.count, 6u);
  EXPECT_EQ(byStatus->counters.byTargeting[static_cast<size_t>(routing::Targeting::Broadcast)], 6u);
  EXPECT_EQ(byStatus->counters.fanout.counts[6], 6u);
  EXPECT_EQ(dominantTargeting(byStatus->counters), "broadcast");
  EXPECT_EQ(snap.shapes.front().shape, kByCustomer);  // sorted by count
  EXPECT_EQ(snap.totals.ops, 68u);
  ASSERT_EQ(snap.shardOps.size(), 6u);
  EXPECT_EQ(snap.shardOps[2], 68u);
  EXPECT_EQ(snap.shardOps[0], 6u);
  EXPECT_EQ(snap.connections.size(), 2u);
}

TEST(Registry, TotalsSurviveConnectionClose) {
  Registry registry;
  {
    auto rec = registry.newRecorder();
    rec->onConnectionOpen();
    Command c(R"({"find":"orders","filter":{"status":"x"},"$db":"shop"})");
    for (int i = 0; i < 5; ++i) rec->onReply(rec->onRequest(c.view, "shop.orders", target(routing::Targeting::Single, {1}), 10), protocol::ReplyFacts{}, 20, 1000);
    rec->onConnectionClose();
  }
  Snapshot snap = registry.snapshot();
  ASSERT_NE(findShape(snap, "find", kByStatus), nullptr);
  EXPECT_EQ(findShape(snap, "find", kByStatus)->counters.count, 5u);
  EXPECT_EQ(snap.totals.ops, 5u);
  EXPECT_EQ(snap.totals.replies, 5u);
  EXPECT_TRUE(snap.connections.empty());
  EXPECT_EQ(registry.process().connections_opened.load(), 1u);
  EXPECT_EQ(registry.process().connections_active.load(), 0);
}

// /metrics without the process_* families (RSS and CPU move between two renders).
std::string withoutProcessLines(const std::string& metrics) {
  std::string out;
  size_t at = 0;
  while (at < metrics.size()) {
    size_t end = metrics.find('\n', at);
    if (end == std::string::npos) end = metrics.size();
    std::string_view line(metrics.data() + at, end - at);
    if (line.find("process_") == std::string_view::npos) out.append(line).push_back('\n');
    at = end + 1;
  }
  return out;
}

// Connections served by one thread count into that thread's tally: one slot per shape, whatever the
// number of connections (issue 29: their counters stay in cache). Each connection keeps its own
// totals; a connection's close keeps every count; another thread counts in its own tally, and a
// reply handled there still lands in the slot its request was counted in. /stats and /metrics
// show the merged counts.
TEST(Registry, ConnectionsOnOneThreadShareItsTally) {
  Registry registry;
  auto first = registry.newRecorder(), second = registry.newRecorder();
  first->onConnectionOpen();
  second->onConnectionOpen();
  Command c(R"({"find":"orders","filter":{"status":"x"},"$db":"shop"})");
  Command other(R"({"find":"orders","filter":{"customerId":"C1"},"sort":{"orderDate":-1},"$db":"shop"})");
  auto t = target(routing::Targeting::Single, {1});
  for (int i = 0; i < 5; ++i) first->onReply(first->onRequest(c.view, "shop.orders", t, 10), protocol::ReplyFacts{}, 20, 1000);
  for (int i = 0; i < 3; ++i) second->onReply(second->onRequest(c.view, "shop.orders", t, 10), protocol::ReplyFacts{}, 20, 1000);
  second->onReply(second->onRequest(other.view, "shop.orders", target(routing::Targeting::Broadcast, {0, 1, 2}), 30),
                  protocol::ReplyFacts{}, 40, 2'000'000);
  EXPECT_EQ(registry.threadTally().slotCount(), 2u);  // two shapes, not one set per connection

  // A third connection served by another thread: that thread's tally. Its second request's reply
  // is handled here (a session's strand moves between threads) and still counts in that tally.
  auto third = registry.newRecorder();
  third->onConnectionOpen();
  OpHandle crossed;
  std::thread([&] {
    third->onReply(third->onRequest(c.view, "shop.orders", t, 10), protocol::ReplyFacts{}, 20, 1000);
    crossed = third->onRequest(c.view, "shop.orders", t, 10);
    EXPECT_EQ(crossed.tally, &registry.threadTally());
    EXPECT_EQ(registry.threadTally().slotCount(), 1u);
  }).join();
  ASSERT_NE(crossed.tally, &registry.threadTally());
  third->onReply(crossed, protocol::ReplyFacts{}, 20, 1000);
  EXPECT_EQ(registry.threadTally().slotCount(), 2u);

  Snapshot snap = registry.snapshot();
  ASSERT_NE(findShape(snap, "find", kByStatus), nullptr);
  EXPECT_EQ(findShape(snap, "find", kByStatus)->counters.count, 10u);
  EXPECT_EQ(findShape(snap, "find", kByStatus)->counters.latency.total(), 10u);
  ASSERT_NE(findShape(snap, "find", kByCustomer), nullptr);
  EXPECT_EQ(findShape(snap, "find", kByCustomer)->counters.fanout.counts[3], 1u);
  EXPECT_EQ(snap.totals.ops, 11u);
  EXPECT_EQ(snap.totals.replies, 11u);
  ASSERT_EQ(snap.shardOps.size(), 3u);
  EXPECT_EQ(snap.shardOps[1], 11u);
  EXPECT_EQ(snap.shardOps[0], 1u);
  ASSERT_EQ(snap.connections.size(), 3u);  // each connection's own totals
  EXPECT_EQ(snap.connections[0].totals.ops, 5u);
  EXPECT_EQ(snap.connections[1].totals.ops, 4u);
  EXPECT_EQ(snap.connections[2].totals.ops, 2u);
  EXPECT_EQ(snap.connections[2].totals.replies, 2u);

  // A closed connection takes nothing with it.
  const std::string metricsBefore = registry.renderPrometheus({});
  second->onConnectionClose();
  second.reset();
  snap = registry.snapshot();
  EXPECT_EQ(findShape(snap, "find", kByStatus)->counters.count, 10u);
  EXPECT_EQ(findShape(snap, "find", kByCustomer)->counters.count, 1u);
  EXPECT_EQ(snap.totals.ops, 11u);
  EXPECT_EQ(snap.connections.size(), 2u);
  auto counts = [](const std::string& metrics) {  // without the open/closed connection gauges
    std::string out;
    for (size_t at = 0, end; at < metrics.size(); at = end + 1) {
      end = metrics.find('\n', at);
      if (end == std::string::npos) end = metrics.size();
      if (metrics.compare(at, 23, "shardscope_connections_") != 0) out.append(metrics, at, end - at + 1);
    }
    return out;
  };
  EXPECT_EQ(counts(withoutProcessLines(registry.renderPrometheus({}))), counts(withoutProcessLines(metricsBefore)));
}

TEST(Registry, ErrorsByCode) {
  Registry registry;
  auto rec = registry.newRecorder();
  Command c(R"({"insert":"orders","$db":"shop"})");
  auto t = target(routing::Targeting::Single, {0});
  Doc dup(R"({"n":1,"writeErrors":[{"index":0,"code":11000,"errmsg":"dup"},{"index":1,"code":11000,"errmsg":"dup"}],"ok":1})");
  Doc fail(R"({"ok":0,"errmsg":"no","code":13,"codeName":"Unauthorized"})");
  Doc wce(R"({"n":1,"writeConcernError":{"code":64,"errmsg":"timeout"},"ok":1})");
  Doc ok(R"({"n":1,"ok":1})");
  rec->onReply(rec->onRequest(c.view, "shop.orders", t, 10), protocol::readReplyFacts(dup.doc), 10, 10);
  rec->onReply(rec->onRequest(c.view, "shop.orders", t, 10), protocol::readReplyFacts(fail.doc), 10, 10);
  rec->onReply(rec->onRequest(c.view, "shop.orders", t, 10), protocol::readReplyFacts(wce.doc), 10, 10);
  rec->onReply(rec->onRequest(c.view, "shop.orders", t, 10), protocol::readReplyFacts(ok.doc), 10, 10);
  Snapshot snap = registry.snapshot();
  const auto* s = findShape(snap, "insert", "-");
  ASSERT_NE(s, nullptr);
  EXPECT_EQ(s->counters.count, 4u);
  EXPECT_EQ(s->counters.errors, 3u);
  EXPECT_EQ(s->errorCodes.at(11000), 2u);
  EXPECT_EQ(s->errorCodes.at(13), 1u);
  EXPECT_EQ(s->errorCodes.at(64), 1u);
  EXPECT_EQ(snap.totals.errors, 3u);
}

TEST(Registry, UnparsedAndNoCollection) {
  Registry registry;
  auto rec = registry.newRecorder();
  rec->onUnparsed(40);
  rec->onDecodeError();
  Command hello(R"({"hello":1,"$db":"admin"})");
  rec->onRequest(hello.view, "", target(routing::Targeting::NoCollection, {}), 30);
  Snapshot snap = registry.snapshot();
  EXPECT_EQ(snap.totals.byTargeting[static_cast<size_t>(routing::Targeting::Unclassified)], 1u);
  EXPECT_EQ(snap.totals.byTargeting[static_cast<size_t>(routing::Targeting::NoCollection)], 1u);
  EXPECT_EQ(snap.totals.unparsed, 1u);
  EXPECT_EQ(snap.totals.decodeErrors, 1u);
  const auto* h = findShape(snap, "hello", "-");
  ASSERT_NE(h, nullptr);
  EXPECT_EQ(h->ns, "admin");  // commands without a collection count under their database
  EXPECT_EQ(registry.process().unparsed_messages.load(), 1u);
  EXPECT_EQ(registry.process().decode_errors.load(), 1u);
}

TEST(Registry, OperationsOverTheAnalysisBudgetAreCounted) {
  Registry registry;
  auto rec = registry.newRecorder();
  Command find(R"({"find":"orders","filter":{},"$db":"shop"})");
  auto over = target(routing::Targeting::Broadcast, {});
  over.over_budget = true;
  rec->onRequest(find.view, "shop.orders", over, 30);
  rec->onRequest(find.view, "shop.orders", target(routing::Targeting::Broadcast, {}), 30);
  EXPECT_EQ(registry.process().analysis_over_budget.load(), 1u);
}

TEST(Registry, ResetZeroesCountersButKeepsHandlesValid) {
  Registry registry;
  auto rec = registry.newRecorder();
  Command c(R"({"find":"orders","filter":{"status":"x"},"$db":"shop"})");
  OpHandle pending = rec->onRequest(c.view, "shop.orders", target(routing::Targeting::Single, {0}), 10);
  registry.reset();
  EXPECT_EQ(registry.snapshot().totals.ops, 0u);
  EXPECT_TRUE(registry.snapshot().shapes.empty());
  rec->onReply(pending, protocol::ReplyFacts{}, 5, 100);  // in flight across the reset: still safe
  rec->onRequest(c.view, "shop.orders", target(routing::Targeting::Single, {0}), 10);
  Snapshot snap = registry.snapshot();
  EXPECT_EQ(snap.totals.ops, 1u);
  EXPECT_EQ(findShape(snap, "find", kByStatus)->counters.count, 1u);
}

TEST(Registry, LatencyQuantiles) {
  LatencyHistogram h;
  for (int i = 1; i <= 1000; ++i) h.record(static_cast<uint64_t>(i) * 10'000);  // 10us .. 10ms uniform
  EXPECT_NEAR(static_cast<double>(h.quantile(0.5)), 5e6, 5e6 * 0.25);
  EXPECT_NEAR(static_cast<double>(h.quantile(0.9)), 9e6, 9e6 * 0.25);
  EXPECT_NEAR(static_cast<double>(h.quantile(0.99)), 9.9e6, 9.9e6 * 0.25);
  EXPECT_EQ(h.max, 10'000'000u);
  EXPECT_LE(h.quantile(1.0), h.max);
}

// 100,000 distinct shapes into one namespace: the catalog stops at the cap, the rest lands in the
// namespace's `other` bucket, and memory stays bounded.
TEST(Registry, ShapeCapBoundsMemory) {
  StatsOptions options;
  options.max_shapes_per_namespace = 1000;
  Registry registry(options);
  auto rec = registry.newRecorder();
  auto t = target(routing::Targeting::Broadcast, {0, 1});
  for (int i = 0; i < 100'000; ++i) {
    Command c(R"({"find":"events","filter":{"f)" + std::to_string(i) + R"(":1},"$db":"shop"})");
    rec->onReply(rec->onRequest(c.view, "shop.events", t, 10), protocol::ReplyFacts{}, 10, 1000);
  }
  Snapshot snap = registry.snapshot();
  EXPECT_LE(snap.shapesTracked, 1001u);
  EXPECT_LE(registry.threadTally().cachedShapes(), 4096u);
  EXPECT_LE(registry.threadTally().slotCount(), 1001u);
  const auto* other = findShape(snap, "find", "<other>");
  ASSERT_NE(other, nullptr);
  EXPECT_TRUE(other->other);
  EXPECT_EQ(other->counters.count, 99'000u);
  EXPECT_EQ(snap.totals.ops, 100'000u);
  ASSERT_EQ(snap.namespaces.size(), 1u);
  EXPECT_TRUE(snap.namespaces[0].atCap);
  std::string json = renderJson(snap, {});
  EXPECT_NE(json.find(R"("namespacesAtCap":["shop.events"])"), std::string::npos);
  EXPECT_NE(json.find(R"("opsInOther":99000)"), std::string::npos);
}

TEST(Registry, NamespaceAndTallyBudgets) {
  StatsOptions options;
  options.max_namespaces = 3;
  options.max_shapes_per_tally = 2;
  Registry registry(options);
  auto rec = registry.newRecorder();
  auto t = target(routing::Targeting::Single, {0});
  for (int i = 0; i < 10; ++i) {
    std::string coll = "c" + std::to_string(i);
    Command c(R"({"find":")" + coll + R"(","filter":{"x":1},"$db":"db"})");
    rec->onReply(rec->onRequest(c.view, "db." + coll, t, 1), protocol::ReplyFacts{}, 1, 1);
  }
  Snapshot snap = registry.snapshot();
  EXPECT_EQ(snap.namespaces.size(), 4u);  // 3 + "<other>"
  EXPECT_LE(registry.threadTally().slotCount(), 2u);
  uint64_t total = 0, replies = 0;
  for (const auto& s : snap.shapes) {
    total += s.counters.count;
    replies += s.counters.latency.total();
  }
  EXPECT_EQ(total, 10u);
  EXPECT_EQ(replies, 10u);
}

TEST(Registry, ConcurrentRecordersAndReaders) {
  Registry registry;
  constexpr int kThreads = 4, kOps = 20'000;
  std::atomic<bool> done{false};
  std::thread reader([&] {
    while (!done) (void)registry.renderJson({});
  });
  std::vector<std::thread> writers;
  for (int t = 0; t < kThreads; ++t)
    writers.emplace_back([&] {
      auto rec = registry.newRecorder();
      rec->onConnectionOpen();
      Command c(R"({"find":"orders","filter":{"status":"x"},"$db":"shop"})");
      for (int i = 0; i < kOps; ++i)
        rec->onReply(rec->onRequest(c.view, "shop.orders", target(routing::Targeting::Single, {3}), 1), protocol::ReplyFacts{}, 1, 1);
    });
  for (auto& w : writers) w.join();
  done = true;
  reader.join();
  Snapshot snap = registry.snapshot();
  EXPECT_EQ(findShape(snap, "find", kByStatus)->counters.count, static_cast<uint64_t>(kThreads * kOps));
  EXPECT_EQ(snap.shardOps[3], static_cast<uint64_t>(kThreads * kOps));
}

TEST(Registry, RecordValuesKeepsASample) {
  Command c(R"({"find":"users","filter":{"email":"alice@example.com"},"$db":"app"})");
  for (bool recordValues : {false, true}) {
    StatsOptions options;
    options.record_values = recordValues;
    Registry registry(options);
    auto rec = registry.newRecorder();
    rec->onRequest(c.view, "app.users", target(routing::Targeting::Single, {0}), 1);
    std::string json = registry.renderJson({});
    std::string metrics = registry.renderPrometheus({});
    EXPECT_EQ(metrics.find("alice"), std::string::npos);
    EXPECT_EQ(json.find("alice") != std::string::npos, recordValues) << json;
  }
}

// Per-shard counts follow the shard's name, not its position in the routing table: after a reload
// that removes shardB and reorders the rest, shardB keeps its count and the new position 0 (shardC)
// adds to shardC's, in the snapshot, /stats and /metrics. Before names were kept, position 0 after
// the reload added to shardA's row.
TEST(Registry, ShardCountsStayWithTheirNameAcrossTableChanges) {
  Registry registry;
  auto rec = registry.newRecorder();
  Command c(R"({"find":"orders","filter":{"customerId":"C1"},"$db":"shop"})");
  registry.setShardNames({"shardA", "shardB", "shardC"});
  rec->onRequest(c.view, "shop.orders", target(routing::Targeting::Single, {1}), 10);  // shardB
  rec->onRequest(c.view, "shop.orders", target(routing::Targeting::Single, {2}), 10);  // shardC
  registry.setShardNames({"shardC", "shardA", "shardD"});  // shardB removed, shardD added, reordered
  rec->onRequest(c.view, "shop.orders", target(routing::Targeting::Single, {0}), 10);  // shardC
  rec->onRequest(c.view, "shop.orders", target(routing::Targeting::Single, {2}), 10);  // shardD
  auto other = registry.newRecorder();  // a session opened after the change
  other->onRequest(c.view, "shop.orders", target(routing::Targeting::Multi, {0, 1}), 10);  // shardC, shardA

  Snapshot snap = registry.snapshot();
  std::map<std::string, uint64_t> byName;
  for (size_t i = 0; i < snap.shardOps.size(); ++i) byName[snap.shardNames.at(i)] = snap.shardOps[i];
  EXPECT_EQ(byName, (std::map<std::string, uint64_t>{{"shardA", 1}, {"shardB", 1}, {"shardC", 3}, {"shardD", 1}}));

  std::string metrics = renderPrometheus(snap, {"shardC", "shardA", "shardD"});
  EXPECT_NE(metrics.find("shardscope_shard_ops_total{shard=\"shardB\"} 1\n"), std::string::npos) << metrics;
  EXPECT_NE(metrics.find("shardscope_shard_ops_total{shard=\"shardC\"} 3\n"), std::string::npos) << metrics;
  EXPECT_NE(metrics.find("shardscope_shard_ops_total{shard=\"shardA\"} 1\n"), std::string::npos) << metrics;
  std::string json = renderJson(snap, {"shardC", "shardA", "shardD"});
  EXPECT_NE(json.find(R"("name":"shardC","ops":3)"), std::string::npos) << json;
  EXPECT_NE(json.find(R"("name":"shardB","ops":1)"), std::string::npos) << json;

  // Closed sessions fold into the same names.
  rec.reset();
  other.reset();
  Snapshot after = registry.snapshot();
  for (size_t i = 0; i < after.shardOps.size(); ++i) EXPECT_EQ(after.shardOps[i], byName[after.shardNames[i]]);
}

// Per (namespace, shard) counts use the ids the per-shard count found (one scan of the set): the
// same counts for a few shards, for more than the recorder keeps (it scans again), and under a
// table whose positions map to other ids.
TEST(Registry, NamespaceShardCountsMatchShardCounts) {
  for (bool remapped : {false, true}) {
    Registry registry;
    std::vector<std::string> names;
    for (int i = 0; i < 40; ++i) names.push_back("shard" + std::to_string(remapped ? 39 - i : i));
    if (remapped) registry.setShardNames(names);
    auto rec = registry.newRecorder();
    Command find(R"({"find":"orders","filter":{"customerId":"C1"},"$db":"shop"})");
    Command update(R"({"update":"orders","updates":[{"q":{"customerId":"C1"},"u":{"$set":{"a":1}}}],"$db":"shop"})");
    rec->onRequest(find.view, "shop.orders", target(routing::Targeting::Single, {3}), 10);
    rec->onRequest(find.view, "shop.orders", target(routing::Targeting::Multi, {1, 5, 17}), 10);
    routing::TargetResult wide = target(routing::Targeting::Broadcast, {});
    for (size_t i = 0; i < 40; i += 2) wide.shards.set(i);  // 20 shards: past what the recorder keeps
    rec->onRequest(update.view, "shop.orders", wide, 10);
    rec->onRequest(update.view, "shop.orders", target(routing::Targeting::Single, {39}), 10);

    Snapshot snap = registry.snapshot();
    ASSERT_EQ(snap.nsShards.size(), 1u);
    const auto& row = snap.nsShards[0];
    uint64_t rowOps = 0;
    for (size_t id = 0; id < snap.shardOps.size(); ++id) {
      uint64_t ops = id < row.size() ? row[id].ops() : 0;
      EXPECT_EQ(ops, snap.shardOps[id]) << "shard id " << id << (remapped ? " (remapped)" : "");
      rowOps += ops;
    }
    EXPECT_EQ(rowOps, 1u + 3u + 20u + 1u);
    auto at = [&](size_t position) { return remapped ? 39 - position : position; };  // names reversed
    auto idOf = [&](size_t position) {
      std::string name = "shard" + std::to_string(at(position));
      for (size_t id = 0; id < snap.shardNames.size(); ++id)
        if (snap.shardNames[id] == name) return id;
      return remapped ? SIZE_MAX : position;
    };
    ASSERT_LT(idOf(3), row.size());
    EXPECT_EQ(row[idOf(3)].byHosts[static_cast<size_t>(HostsTargeted::OneShard)], 1u);
    EXPECT_EQ(row[idOf(17)].byHosts[static_cast<size_t>(HostsTargeted::ManyShards)], 1u);
    EXPECT_EQ(row[idOf(38)].byHosts[static_cast<size_t>(HostsTargeted::AllShards)], 1u);
    EXPECT_EQ(row[idOf(38)].writes, 1u);
    EXPECT_EQ(row[idOf(39)].writes, 1u);
    EXPECT_EQ(row[idOf(1)].writes, 0u);
  }
}

// Shard positions at the edges of the set's 64-bit words, up to the last one, are counted as
// themselves (no routing table: ids are positions).
TEST(Registry, ShardCountsAtEveryWordOfTheSet) {
  Registry registry;
  auto rec = registry.newRecorder();
  Command c(R"({"find":"orders","filter":{"customerId":"C1"},"$db":"shop"})");
  const std::vector<size_t> positions = {0, 1, 63, 64, 127, 128, 511, 1022, 1023};
  routing::TargetResult t = target(routing::Targeting::Multi, {});
  for (size_t p : positions) t.shards.set(p);
  rec->onRequest(c.view, "shop.orders", t, 10);
  Snapshot snap = registry.snapshot();
  ASSERT_EQ(snap.shardOps.size(), 1024u);
  for (size_t i = 0; i < snap.shardOps.size(); ++i) {
    bool reached = std::find(positions.begin(), positions.end(), i) != positions.end();
    EXPECT_EQ(snap.shardOps[i], reached ? 1u : 0u) << i;
    uint64_t nsOps = i < snap.nsShards.at(0).size() ? snap.nsShards[0][i].ops() : 0;
    EXPECT_EQ(nsOps, reached ? 1u : 0u) << i;
  }
}

// Upserts the current key cannot target are counted per shape (TargetResult::untargetable_upserts).
TEST(Registry, CountsUntargetableUpsertsPerShape) {
  Registry registry;
  auto rec = registry.newRecorder();
  Command c(R"({"update":"orders","updates":[{"q":{"status":"x"},"u":{"$set":{"a":1}},"upsert":true}],"$db":"shop"})");
  auto t = target(routing::Targeting::Broadcast, {0, 1});
  t.untargetable_upserts = 2;
  rec->onRequest(c.view, "shop.orders", t, 10);
  rec->onRequest(c.view, "shop.orders", t, 10);
  Snapshot snap = registry.snapshot();
  ASSERT_EQ(snap.shapes.size(), 1u);
  EXPECT_EQ(snap.shapes[0].counters.untargetableUpserts, 4u);
  std::string metrics = renderPrometheus(snap, {});
  EXPECT_NE(metrics.find("shardscope_untargetable_upserts_total{ns=\"shop.orders\",command=\"update\",shape_id=\"" +
                         shapeIdHex(snap.shapes[0].hash) + "\"} 4\n"),
            std::string::npos)
      << metrics;
  EXPECT_NE(renderJson(snap, {}).find(R"("untargetableUpserts":4)"), std::string::npos);
}

}  // namespace
}  // namespace shardscope::stats

namespace shardscope::stats {
namespace {

// The dashboard's "why": /stats carries each shape's targeting reason (static text, no values),
// also for a shape whose operations were recorded by two sessions and merged.
TEST(RegistryReasons, ShapeCarriesTheReasonOfItsClass) {
  Registry registry;
  auto a = registry.newRecorder();
  auto b = registry.newRecorder();
  auto broadcast = target(routing::Targeting::Broadcast, {0, 1});
  broadcast.reason = "filter does not constrain the shard key: broadcast";
  auto single = target(routing::Targeting::Single, {1});
  single.reason = "equality on the full shard key";
  for (int i = 0; i < 3; ++i) {
    Command c(R"({"find":"orders","filter":{"status":"S)" + std::to_string(i) + R"("},"$db":"shop"})");
    a->onRequest(c.view, "shop.orders", broadcast, 10);
  }
  Command one(R"({"find":"orders","filter":{"status":"X"},"$db":"shop"})");
  b->onRequest(one.view, "shop.orders", single, 10);
  std::string json = registry.renderJson({"shardA", "shardB"});
  EXPECT_NE(json.find(R"("class":"broadcast","countClass":"allShards","reason":"filter does not constrain the shard key: broadcast")"),
            std::string::npos) << json;
  EXPECT_NE(json.find(R"("reasons":{"single":"equality on the full shard key","broadcast":"filter does not constrain the shard key: broadcast"})"),
            std::string::npos) << json;
  EXPECT_EQ(json.find("\"S1\""), std::string::npos);  // no value
}

}  // namespace
}  // namespace shardscope::stats
