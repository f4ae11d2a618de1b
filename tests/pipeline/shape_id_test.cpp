// One shape id per request (issue 24): the pipeline computes the shape and its id once, and the
// same id is what /stats (the statistics registry), /metrics (shape_info), /evaluate (byShape),
// /mirror (shapes) and capture files (the request record) show. The request goes through the
// real pipeline with the real features' observers attached; the mirror's shadow is an address
// nothing listens on (the session side notes the shape before any shadow I/O).
#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>

#include "common/query_shape.h"
#include "evaluation/evaluator.h"
#include "pipeline/capture_observer.h"
#include "pipeline/evaluation_observer.h"
#include "pipeline/mirror_observer.h"
#include "pipeline/statistics_observer.h"
#include "shadow/capture_format.h"
#include "shadow/capture_writer.h"
#include "shadow/mirror.h"
#include "stats/render.h"
#include "tests/pipeline/pipeline_support.h"

namespace shardscope::pipeline::testing {
namespace {

namespace fs = std::filesystem;

struct TempDir {
  TempDir() {
    char tmpl[] = "/tmp/shardscope-shape-id-XXXXXX";
    path = mkdtemp(tmpl);
  }
  ~TempDir() { fs::remove_all(path); }
  std::string path;
};

// The capture's request records, in order: (shape id in `extra`, redacted BSON's "shape").
std::vector<std::pair<uint64_t, std::string>> capturedRequests(const std::string& file) {
  std::vector<std::pair<uint64_t, std::string>> out;
  FILE* f = std::fopen(file.c_str(), "rb");
  EXPECT_NE(f, nullptr) << file;
  if (!f) return out;
  shadow::CaptureReader reader(f);
  shadow::FileHeader header;
  std::string error;
  EXPECT_EQ(reader.readHeader(header, error), shadow::CaptureReader::Status::Ok) << error;
  shadow::Record r;
  while (reader.next(r, error) == shadow::CaptureReader::Status::Ok) {
    if (r.type != shadow::RecordType::Request) continue;
    bson_t doc;
    bson_iter_t it;
    std::string shape;
    if (bson_init_static(&doc, r.payload.data(), r.payload.size()) && bson_iter_init_find(&it, &doc, "shape"))
      shape = bson_iter_utf8(&it, nullptr);
    out.emplace_back(r.extra, shape);
  }
  std::fclose(f);
  return out;
}

const stats::ShapeSnapshot* statsShape(const stats::Snapshot& snap, std::string_view command) {
  for (const auto& s : snap.shapes)
    if (s.command == command) return &s;
  return nullptr;
}

bool contains(const std::string& text, const std::string& needle) { return text.find(needle) != std::string::npos; }

TEST(ShapeIdAcrossSurfaces, OneRequestShowsOneIdInStatsMetricsEvaluationMirrorAndCapture) {
  FakeEnvironment env;
  env.table = routing::testing::loadData("orders_6shards.json");
  routing::CursorShards cursors;

  evaluation::EvaluationOptions eo;
  eo.configured_candidates = {{"shop.orders", R"({"customerId": 1})"}};
  evaluation::Evaluator evaluator(eo);
  auto evaluationObserver = evaluator.newObserver();

  std::string error;
  shadow::MirrorOptions mo;
  mo.upstream = "mongodb://127.0.0.1:9/?serverSelectionTimeoutMS=50&connectTimeoutMS=50";
  mo.mode = shadow::MirrorOptions::Mode::All;
  mo.timeout_ms = 50;
  auto mirror = shadow::Mirror::create(mo, error);
  ASSERT_TRUE(mirror) << error;

  TempDir dir;
  shadow::CaptureOptions co;
  co.file = dir.path + "/cap";
  co.mode = shadow::CaptureMode::Redacted;
  auto capture = shadow::CaptureWriter::create(co, error);
  ASSERT_TRUE(capture) << error;

  Connection conn(env, &cursors);
  StatisticsObserver statistics(*conn.recorder);
  EvaluationObserver evaluation(*evaluationObserver);
  MirrorObserver mirroring(*mirror, 1);
  CaptureObserver capturing(*capture, 1);
  for (Observer* o : std::initializer_list<Observer*>{&statistics, &evaluation, &mirroring, &capturing})
    conn.pipeline.addObserver(*o);

  auto find = request(
      R"({"find": "orders", "filter": {"customerId": "C0100"}, "sort": {"orderDate": -1}, "$db": "shop"})", 7);
  conn.send(find);
  auto found = reply(cursorReply(0, "firstBatch", R"({"_id": 1})"), 7);
  conn.receive(found);
  // A batch of two statements of different shapes: the request's id is its first statement's.
  auto update = request(R"({"update": "orders", "updates": [
      {"q": {"orderId": "O1"}, "u": {"$set": {"status": "paid"}}},
      {"q": {"customerId": "C1"}, "u": {"$set": {"status": "late"}}, "multi": true}], "$db": "shop"})", 8);
  conn.send(update);
  auto updated = reply(R"({"n": 1, "nModified": 1, "ok": 1.0})", 8);
  conn.receive(updated);
  evaluationObserver->flush();
  mirror->waitIdle();
  capture->flush();

  // The statistics registry: the id is common::shapeId of the namespace, command and shape text.
  const auto snap = conn.registry.snapshot();
  const auto* findShape = statsShape(snap, "find");
  const auto* updateShape = statsShape(snap, "update");
  ASSERT_TRUE(findShape && updateShape);
  EXPECT_EQ(findShape->shape, R"({"customerId":"<string>"} sort:{"orderDate":-1})");
  EXPECT_EQ(findShape->hash, common::shapeId("shop.orders", "find", findShape->shape));
  EXPECT_EQ(updateShape->hash, common::shapeId("shop.orders", "update", updateShape->shape));
  const std::string findId = common::shapeIdHex(findShape->hash);
  const std::string updateId = common::shapeIdHex(updateShape->hash);
  // The second statement has its own shape, in the same format, with its own id.
  std::string second;
  testing::Doc statement(R"({"q": {"customerId": "C1"}, "u": {"$set": {"status": "late"}}, "multi": true})");
  common::computeStatementShape(protocol::CommandKind::Update, *statement.get(), second);
  const std::string secondId = common::shapeIdHex(common::shapeId("shop.orders", "update", second));
  EXPECT_NE(secondId, updateId);

  // /stats and /metrics.
  const std::string statsJson = stats::renderJson(snap, {});
  EXPECT_TRUE(contains(statsJson, R"("id":")" + findId + '"')) << statsJson;
  const std::string metrics = stats::renderPrometheus(snap, {});
  EXPECT_TRUE(contains(metrics, R"(shardscope_shape_info{ns="shop.orders",command="find",shape_id=")" + findId + '"'))
      << metrics;
  EXPECT_TRUE(contains(metrics, R"(shape_id=")" + updateId + '"')) << metrics;

  // /evaluate: each statement under its shape's id, the first one's being the request's.
  const std::string evaluationJson = evaluator.renderJson();
  EXPECT_TRUE(contains(evaluationJson, R"("id":")" + findId + '"')) << evaluationJson;
  EXPECT_TRUE(contains(evaluationJson, R"("id":")" + updateId + '"')) << evaluationJson;
  EXPECT_TRUE(contains(evaluationJson, R"("id":")" + secondId + '"')) << evaluationJson;

  // /mirror.
  const std::string mirrorJson = mirror->renderJson();
  EXPECT_TRUE(contains(mirrorJson, R"("shapeId":")" + findId + '"')) << mirrorJson;
  EXPECT_TRUE(contains(mirrorJson, R"("shapeId":")" + updateId + '"')) << mirrorJson;
  mirror->stop();

  // The capture's request records carry the id and the same shape text.
  const auto records = capturedRequests(co.file);
  ASSERT_EQ(records.size(), 2u);
  EXPECT_EQ(common::shapeIdHex(records[0].first), findId);
  EXPECT_EQ(records[0].second, findShape->shape);
  EXPECT_EQ(common::shapeIdHex(records[1].first), updateId);
  EXPECT_EQ(records[1].second, updateShape->shape);
}

}  // namespace
}  // namespace shardscope::pipeline::testing
