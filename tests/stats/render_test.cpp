// Rendering: /stats is valid JSON with the documented fields; /metrics is well-formed Prometheus
// text with cumulative histograms and bounded labels.
#include "stats/render.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <map>
#include <sstream>
#include <string>

#include "common/name_text.h"
#include "stats/registry.h"

namespace shardscope::stats {
namespace {

struct Json {
  explicit Json(const std::string& text) {
    bson_error_t error;
    doc = bson_new_from_json(reinterpret_cast<const uint8_t*>(text.data()), static_cast<ssize_t>(text.size()), &error);
    EXPECT_NE(doc, nullptr) << error.message;
  }
  ~Json() { bson_destroy(doc); }
  double num(const char* path) const {
    bson_iter_t it, found;
    if (!doc || !bson_iter_init(&it, doc) || !bson_iter_find_descendant(&it, path, &found)) return -1;
    return bson_iter_as_double(&found);
  }
  std::string str(const char* path) const {
    bson_iter_t it, found;
    if (!doc || !bson_iter_init(&it, doc) || !bson_iter_find_descendant(&it, path, &found) ||
        !BSON_ITER_HOLDS_UTF8(&found))
      return "<missing>";
    return bson_iter_utf8(&found, nullptr);
  }
  bson_t* doc;
};

Snapshot sampleSnapshot() {
  Snapshot snap;
  snap.nowMs = 1'700'000'010'000;
  snap.startedMs = snap.resetMs = 1'700'000'000'000;
  snap.maxShapesPerNamespace = 1000;
  snap.prometheusTopShapes = 1;
  ShapeSnapshot a;
  a.hash = 0xabc;
  a.ns = "shop.orders";
  a.command = "find";
  a.shape = R"({"customerId":"<string>"})";
  a.counters.count = 62;
  a.counters.byTargeting[0] = 62;
  for (int i = 0; i < 62; ++i) {
    a.counters.fanout.record(1);
    a.counters.latency.record(2'000'000);
  }
  a.counters.firstSeenMs = snap.startedMs;
  a.counters.lastSeenMs = snap.nowMs;
  ShapeSnapshot b = a;
  b.hash = 0xdef;
  b.shape = R"({"status":"<string>"})";
  b.counters = {};
  b.counters.count = 6;
  b.counters.byTargeting[2] = 6;
  b.counters.byHosts[2] = 6;  // allShards: what broadcastShare counts
  for (int i = 0; i < 6; ++i) {
    b.counters.fanout.record(6);
    b.counters.latency.record(30'000'000);
  }
  b.counters.errors = 1;
  b.errorCodes[11000] = 1;
  snap.shapes = {a, b};
  snap.totals.ops = 68;
  snap.totals.byTargeting[0] = 62;
  snap.totals.byTargeting[2] = 6;
  snap.shardOps = {6, 6, 68, 6, 6, 6};
  snap.namespaces = {{"shop.orders", 2, false}};
  snap.process.push_back({"connections_active", Metric::connections_active, 3});
  return snap;
}

TEST(RenderJson, DocumentedFields) {
  Json j(renderJson(sampleSnapshot(), {"shardA", "shardB", "shardC"}));
  EXPECT_EQ(j.num("schemaVersion"), 1);
  EXPECT_EQ(j.num("totals.ops"), 68);
  EXPECT_EQ(j.num("totals.targeting.broadcast"), 6);
  EXPECT_EQ(j.num("process.connectionsActive"), 3);
  EXPECT_EQ(j.str("shards.0.name"), "shardA");
  EXPECT_EQ(j.str("shards.3.name"), "shard3");  // past the names given
  EXPECT_EQ(j.num("shards.2.ops"), 68);
  EXPECT_EQ(j.str("shapes.0.id"), "0000000000000abc");
  EXPECT_EQ(j.str("shapes.0.shape"), R"({"customerId":"<string>"})");
  EXPECT_EQ(j.str("shapes.0.class"), "single");
  EXPECT_EQ(j.num("shapes.0.count"), 62);
  EXPECT_EQ(j.num("shapes.0.shardsTouched.max"), 1);
  EXPECT_EQ(j.num("shapes.1.shardsTouched.histogram.6"), 6);
  EXPECT_EQ(j.str("shapes.1.class"), "broadcast");
  EXPECT_EQ(j.num("shapes.1.broadcastShare"), 1);
  EXPECT_EQ(j.num("shapes.1.errors.byCode.11000"), 1);
  EXPECT_EQ(j.num("shapes.1.latency.maxNs"), 30'000'000);
  EXPECT_GT(j.num("shapes.1.latency.p50Ns"), 20'000'000);
  EXPECT_EQ(j.str("shapes.0.firstSeen"), "2023-11-14T22:13:20.000Z");
  EXPECT_EQ(j.num("shapeCap.maxShapesPerNamespace"), 1000);
}

TEST(RenderJson, TopLimitsShapesOnly) {
  Json j(renderJson(sampleSnapshot(), {}, 1));
  EXPECT_EQ(j.num("shapesTotal"), 2);
  EXPECT_EQ(j.num("shapes.0.count"), 62);
  EXPECT_EQ(j.num("shapes.1.count"), -1);
  EXPECT_EQ(j.num("totals.ops"), 68);
}

TEST(RenderJson, EscapesAndInvalidUtf8) {
  Snapshot snap = sampleSnapshot();
  snap.shapes[0].ns = std::string("we\"ird\n\xff", 8);
  Json j(renderJson(snap, {}));
  // Not UTF-8: U+FFFD and the hash of the raw name (common::utf8Name), as the export and /metrics.
  EXPECT_EQ(j.str("shapes.0.ns"), "we\"ird\n\xef\xbf\xbd" + common::utf8Name(snap.shapes[0].ns).substr(10));
  EXPECT_EQ(common::utf8Name(snap.shapes[0].ns).substr(10, 1), "#");
}

// Parses "name{labels} value" lines into name{labels} -> value.
std::map<std::string, double> samples(const std::string& text) {
  std::map<std::string, double> out;
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') continue;
    size_t space = line.rfind(' ');
    out[line.substr(0, space)] = std::stod(line.substr(space + 1));
  }
  return out;
}

TEST(RenderPrometheus, CountersAndHistograms) {
  std::string text = renderPrometheus(sampleSnapshot(), {"shardA", "shardB", "shardC", "shardD", "shardE", "shardF"});
  auto s = samples(text);
  EXPECT_EQ(s[R"(shardscope_ops_total{ns="shop.orders",command="find",targeting="single"})"], 62);
  EXPECT_EQ(s[R"(shardscope_ops_total{ns="shop.orders",command="find",targeting="broadcast"})"], 6);
  EXPECT_EQ(s[R"(shardscope_shard_ops_total{shard="shardC"})"], 68);
  EXPECT_EQ(s[R"(shardscope_op_shards_touched_bucket{ns="shop.orders",command="find",le="1"})"], 62);
  EXPECT_EQ(s[R"(shardscope_op_shards_touched_bucket{ns="shop.orders",command="find",le="6"})"], 68);
  EXPECT_EQ(s[R"(shardscope_op_latency_seconds_bucket{ns="shop.orders",command="find",le="0.0025"})"], 62);
  EXPECT_EQ(s[R"(shardscope_op_latency_seconds_bucket{ns="shop.orders",command="find",le="+Inf"})"], 68);
  EXPECT_EQ(s[R"(shardscope_op_latency_seconds_count{ns="shop.orders",command="find"})"], 68);
  EXPECT_EQ(s[R"(shardscope_op_errors_total{ns="shop.orders",command="find",code="11000"})"], 1);
  // Only the top shape gets its own series; the other is summed as "rest".
  EXPECT_EQ(s[R"(shardscope_shape_ops_total{ns="shop.orders",command="find",shape_id="0000000000000abc",targeting="single"})"], 62);
  EXPECT_EQ(s[R"(shardscope_shape_ops_total{ns="shop.orders",command="find",shape_id="rest",targeting="broadcast"})"], 6);
  EXPECT_EQ(s[R"(shardscope_connections_active)"], 3);
  // Every metric family has HELP and TYPE, and every name has the prefix.
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    if (line.starts_with("# TYPE ")) continue;
    if (line.starts_with("# HELP ")) {
      EXPECT_TRUE(line.substr(7).starts_with("shardscope_")) << line;
      continue;
    }
    EXPECT_TRUE(line.starts_with("shardscope_")) << line;
  }
}

TEST(RenderPrometheus, LatencyBucketsMonotonic) {
  std::string text = renderPrometheus(sampleSnapshot(), {});
  std::istringstream in(text);
  std::string line;
  double previous = -1;
  int buckets = 0;
  while (std::getline(in, line)) {
    if (!line.starts_with("shardscope_op_latency_seconds_bucket")) continue;
    double v = std::stod(line.substr(line.rfind(' ') + 1));
    EXPECT_GE(v, previous) << line;
    previous = v;
    ++buckets;
  }
  EXPECT_EQ(buckets, 8 * 3 + 1 + 1);  // 1, 2.5, 5 per decade from 1us, 100s, +Inf
}

TEST(RenderPrometheus, LabelValuesEscaped) {
  Snapshot snap = sampleSnapshot();
  snap.shapes[0].ns = "a\"b\\c\nd";
  std::string text = renderPrometheus(snap, {});
  EXPECT_NE(text.find(R"(ns="a\"b\\c\nd")"), std::string::npos);
}

// Dashboards and alerts depend on the exposition: every family's name, HELP, TYPE and label set, and
// each sample, stay byte-for-byte what tests/data/stats/prometheus_golden.txt holds (rendered from a
// snapshot with every process counter). SHARDSCOPE_UPDATE_GOLDEN=1 rewrites it after a deliberate change.
TEST(RenderPrometheus, ExpositionIsStable) {
  Snapshot snap = sampleSnapshot();
  snap.process = Registry().snapshot().process;
  snap.shapes[0].counters.byHosts[0] = 62;
  snap.shapes[1].counters.byHosts[2] = 6;
  snap.totals.byHosts[0] = 62;
  snap.totals.byHosts[2] = 6;
  snap.shapes[0].counters.bytesIn = 6200;
  snap.shapes[1].counters.bytesOut = 900;
  snap.totals.replies = 68;
  snap.totals.errors = 1;
  snap.nsShards.assign(1, std::vector<NsShardCounts>(6));  // shop.orders: the broadcasts on every shard,
  for (auto& c : snap.nsShards[0]) c.byHosts[2] = 6;        // the targeted finds on shardC
  snap.nsShards[0][2].byHosts[0] = 62;
  std::string text = renderPrometheus(snap, {"shardA", "shardB", "shardC", "shardD", "shardE", "shardF"});
  const std::string path = std::string(SHARDSCOPE_SOURCE_DIR) + "/tests/data/stats/prometheus_golden.txt";
  if (std::getenv("SHARDSCOPE_UPDATE_GOLDEN")) std::ofstream(path) << text;
  std::ifstream in(path);
  std::string golden((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_EQ(text, golden);
}

}  // namespace
}  // namespace shardscope::stats
