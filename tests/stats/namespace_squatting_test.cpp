// One client must not blind the statistics: names it invents (namespaces, shapes, commands) are
// bounded, and the routing table's namespaces and the command table's commands that arrive after
// them still get rows of their own. Before, 256 finds on db.junk0..db.junk255 filled the catalog
// until restart and the sharded shop.orders was counted under "<other>".
#include <gtest/gtest.h>

#include <string>

#include "common/bounded_name.h"
#include "routing/routing_file.h"
#include "stats/registry.h"
#include "stats/render.h"

namespace shardscope::stats {
namespace {

// {<command>: <collection>, filter: {<field>: 1}, $db: <db>}: a distinct field is a distinct shape.
struct SquatCommand {
  SquatCommand(std::string command, std::string db, std::string collection, std::string field = "a")
      : command_(std::move(command)), db_(std::move(db)), collection_(std::move(collection)) {
    bson_init(&body_);
    bson_append_utf8(&body_, command_.c_str(), -1, collection_.c_str(), -1);
    bson_t filter;
    bson_append_document_begin(&body_, "filter", -1, &filter);
    bson_append_int32(&filter, field.c_str(), -1, 1);
    bson_append_document_end(&body_, &filter);
    view.body = body_;
    view.setName(command_);
    view.collection = collection_;
    view.db = db_;
  }
  ~SquatCommand() { bson_destroy(&body_); }
  std::string ns() const { return db_ + "." + collection_; }
  protocol::CommandView view;

 private:
  std::string command_, db_, collection_;
  bson_t body_;
};

void squatRecord(Recorder& rec, const SquatCommand& c) {
  routing::TargetResult target;
  target.targeting = routing::Targeting::Unsharded;
  rec.onRequest(c.view, c.ns(), target, 100);
}

std::shared_ptr<const routing::RoutingTable> squatRoutingTable() {
  std::string error;
  auto table = routing::parseRoutingText(
      R"({"shards": ["sA", "sB"], "collections": [{"ns": "shop.orders", "key": {"customerId": 1}, "chunks": [
          {"min": {"customerId": {"$minKey": 1}}, "max": {"customerId": "M"}, "shard": "sA"},
          {"min": {"customerId": "M"}, "max": {"customerId": {"$maxKey": 1}}, "shard": "sB"}]}]})",
      false, "squat routing", error);
  EXPECT_TRUE(table) << error;
  return table;
}

// The shape rows the snapshot holds for `ns` (other buckets included).
std::vector<ShapeSnapshot> squatShapesOf(const Snapshot& snap, std::string_view ns) {
  std::vector<ShapeSnapshot> out;
  for (const auto& s : snap.shapes)
    if (s.ns == ns) out.push_back(s);
  return out;
}

bool squatHasNamespace(const Snapshot& snap, std::string_view ns) {
  for (const auto& n : snap.namespaces)
    if (n.ns == ns) return true;
  return false;
}

TEST(NamespaceSquatting, ConfiguredNamespaceKeepsItsRowAfterAClientInventedTheCapsWorth) {
  Registry reg;  // the defaults: 256 namespaces
  reg.setConfiguredNamespaces(squatRoutingTable());
  auto rec = reg.newRecorder();
  for (int i = 0; i < 300; ++i) squatRecord(*rec, SquatCommand("find", "db", "junk" + std::to_string(i)));
  squatRecord(*rec, SquatCommand("find", "shop", "orders", "customerId"));

  Snapshot snap = reg.snapshot();
  ASSERT_TRUE(squatHasNamespace(snap, "shop.orders")) << "the routing table's namespace was not kept";
  auto orders = squatShapesOf(snap, "shop.orders");
  ASSERT_EQ(orders.size(), 1u);
  EXPECT_FALSE(orders[0].other) << "its shape went to an other bucket";
  EXPECT_EQ(orders[0].counters.count, 1u);
  // The invented names stay bounded: 256 rows, the other 44 finds counted and said so.
  EXPECT_FALSE(squatHasNamespace(snap, "db.junk299"));
  EXPECT_EQ(snap.namespaceLookupsRefused, 44u);
  const std::string json = renderJson(snap, {});
  EXPECT_NE(json.find("\"opsInOtherNamespace\":44"), std::string::npos) << json.substr(0, 2000);
  const std::string page = renderPrometheus(snap, {});
  EXPECT_NE(page.find("shardscope_stats_other_namespace_ops_total 44\n"), std::string::npos);
}

TEST(NamespaceSquatting, NamespaceNamedBeforeTheTableArrivedCountsAsConfiguredOnceItDoes) {
  StatsOptions o;
  o.max_namespaces = 4;
  Registry reg(o);
  auto rec = reg.newRecorder();
  squatRecord(*rec, SquatCommand("find", "shop", "orders", "customerId"));  // before discovery's table
  for (int i = 0; i < 3; ++i) squatRecord(*rec, SquatCommand("find", "db", "junk" + std::to_string(i)));
  reg.setConfiguredNamespaces(squatRoutingTable());
  // shop.orders left the pool of invented names: one more of them fits.
  squatRecord(*rec, SquatCommand("find", "db", "late"));
  EXPECT_TRUE(squatHasNamespace(reg.snapshot(), "db.late"));
}

TEST(NamespaceSquatting, InventedShapesCannotUseUpTheConfiguredNamespacesShapes) {
  StatsOptions o;
  o.max_shapes_per_namespace = 5;
  o.max_shapes_total = 20;
  Registry reg(o);
  reg.setConfiguredNamespaces(squatRoutingTable());
  auto rec = reg.newRecorder();
  // 10 invented namespaces x 5 shapes: the whole total cap, and their other buckets.
  for (int n = 0; n < 10; ++n)
    for (int f = 0; f < 6; ++f)
      squatRecord(*rec, SquatCommand("find", "db", "junk" + std::to_string(n), "f" + std::to_string(f)));
  for (int f = 0; f < 3; ++f) squatRecord(*rec, SquatCommand("find", "shop", "orders", "k" + std::to_string(f)));

  auto orders = squatShapesOf(reg.snapshot(), "shop.orders");
  ASSERT_EQ(orders.size(), 3u);
  for (const auto& s : orders) EXPECT_FALSE(s.other) << s.shape;
}

TEST(NamespaceSquatting, InventedOtherBucketsCannotPushTheConfiguredOnesIntoTheGlobalBucket) {
  StatsOptions o;
  o.max_shapes_per_namespace = 1;
  o.max_shapes_total = 1;
  o.max_namespaces = 2000;
  Registry reg(o);
  reg.setConfiguredNamespaces(squatRoutingTable());
  auto rec = reg.newRecorder();
  // 1,100 invented namespaces past the total cap: each asks for its own (ns, find) other bucket.
  for (int n = 0; n < 1100; ++n) squatRecord(*rec, SquatCommand("find", "db", "junk" + std::to_string(n)));
  for (int f = 0; f < 3; ++f) squatRecord(*rec, SquatCommand("find", "shop", "orders", "k" + std::to_string(f)));

  auto orders = squatShapesOf(reg.snapshot(), "shop.orders");
  uint64_t ops = 0;
  for (const auto& s : orders) ops += s.counters.count;
  EXPECT_EQ(ops, 3u) << "the configured namespace's operations went to <other>/<other>";
}

TEST(NamespaceSquatting, TableCommandsKeepTheirNameAfterAClientInventedTheCapsWorth) {
  Registry reg;
  auto rec = reg.newRecorder();
  for (int i = 0; i < 300; ++i) squatRecord(*rec, SquatCommand("junkCommand" + std::to_string(i), "db", "c"));
  squatRecord(*rec, SquatCommand("count", "db", "c"));

  bool kept = false;
  for (const auto& s : reg.snapshot().shapes)
    if (s.command == "count") kept = !s.other;
  EXPECT_TRUE(kept) << "the table's count command was filed under <other>";
}

}  // namespace
}  // namespace shardscope::stats
