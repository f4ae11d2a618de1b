// The capture writer: records land in the file in order, rotation starts new readable segments,
// the size limit stops the capture, redacted captures hold no values.
#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <fstream>

#include "protocol/command_view.h"
#include "shadow/capture_writer.h"
#include "tests/support/bson_builders.h"

namespace shardscope::shadow {
namespace {

namespace fs = std::filesystem;

struct TempDir {
  TempDir() {
    char tmpl[] = "/tmp/shardscope-capture-XXXXXX";
    path = mkdtemp(tmpl);
  }
  ~TempDir() { fs::remove_all(path); }
  std::string path;
};

struct Msg {
  explicit Msg(const std::string& json, const std::vector<testing::Sequence>& seqs = {}, int32_t id = 1)
      : bytes(testing::opMsg(json, seqs, 0, id)) {
    EXPECT_TRUE(protocol::decodeOpMsg(bytes, msg).ok());
    protocol::buildCommandView(msg, view);  // replies have no command view
  }
  std::vector<uint8_t> bytes;
  protocol::OpMsg msg;
  protocol::CommandView view;
};

std::vector<shadow::Record> readAll(const std::string& file, shadow::FileHeader& header, std::vector<std::vector<uint8_t>>& payloads) {
  std::vector<shadow::Record> out;
  FILE* f = std::fopen(file.c_str(), "rb");
  EXPECT_NE(f, nullptr) << file;
  if (!f) return out;
  shadow::CaptureReader reader(f);
  std::string error;
  EXPECT_EQ(reader.readHeader(header, error), shadow::CaptureReader::Status::Ok) << error;
  shadow::Record r;
  while (reader.next(r, error) == shadow::CaptureReader::Status::Ok) {
    payloads.emplace_back(r.payload.begin(), r.payload.end());
    out.push_back(r);
  }
  std::fclose(f);
  return out;
}

TEST(CaptureWriter, FullCaptureKeepsMessagesInOrder) {
  TempDir dir;
  CaptureOptions o;
  o.file = dir.path + "/cap";
  o.mode = shadow::CaptureMode::Full;
  std::string error;
  auto w = CaptureWriter::create(o, error);
  ASSERT_TRUE(w) << error;
  Msg find(R"({"find": "c", "filter": {"secret": "value"}, "$db": "d"})", {}, 11);
  Msg reply(R"({"cursor": {"id": 0, "ns": "d.c", "firstBatch": []}, "ok": 1})", {}, 12);
  w->onConnectionOpen(3);
  w->onRequest(3, 11, find.view, "d.c", find.bytes);
  w->onReply(3, 11, reply.bytes, protocol::readReplyFacts(&reply.view.body), 1234);
  Msg sasl(R"({"saslStart": 1, "payload": {"$binary": {"base64": "AAAA", "subType": "00"}}, "$db": "admin"})");
  w->onRequest(3, 13, sasl.view, "", sasl.bytes);  // never captured
  w->onConnectionClose(3);
  w->flush();
  EXPECT_EQ(w->counters().records, 4u);
  shadow::FileHeader h;
  std::vector<std::vector<uint8_t>> payloads;
  auto records = readAll(o.file, h, payloads);
  EXPECT_EQ(h.mode, shadow::CaptureMode::Full);
  ASSERT_EQ(records.size(), 4u);
  EXPECT_EQ(records[0].type, shadow::RecordType::ConnectionOpen);
  EXPECT_EQ(records[1].type, shadow::RecordType::Request);
  EXPECT_EQ(payloads[1], find.bytes);
  EXPECT_EQ(records[2].type, shadow::RecordType::Reply);
  EXPECT_EQ(records[2].response_to, 11);
  EXPECT_EQ(records[2].extra, 1234u);
  EXPECT_EQ(records[3].type, shadow::RecordType::ConnectionClose);
  EXPECT_LE(records[1].time_ns, records[2].time_ns);
}

TEST(CaptureWriter, RedactedCaptureHasShapesNotValues) {
  TempDir dir;
  CaptureOptions o;
  o.file = dir.path + "/cap";
  std::string error;
  auto w = CaptureWriter::create(o, error);
  ASSERT_TRUE(w) << error;
  Msg find(R"({"find": "orders", "filter": {"customerId": "C-secret-42"}, "$db": "shop"})");
  w->onRequest(1, 1, find.view, "shop.orders", find.bytes);
  w->flush();
  std::ifstream in(o.file, std::ios::binary);
  std::string all((std::istreambuf_iterator<char>(in)), {});
  EXPECT_EQ(all.find("C-secret-42"), std::string::npos);
  EXPECT_NE(all.find("shop.orders"), std::string::npos);
  EXPECT_NE(all.find(R"({"customerId":"<string>"})"), std::string::npos);
}

TEST(CaptureWriter, RotatesAndStopsAtTheSizeLimit) {
  TempDir dir;
  CaptureOptions o;
  o.file = dir.path + "/cap";
  o.mode = shadow::CaptureMode::Full;
  o.rotate_bytes = 4096;
  o.max_bytes = 20000;
  std::string error;
  auto w = CaptureWriter::create(o, error);
  ASSERT_TRUE(w) << error;
  Msg insert(R"({"insert": "c", "$db": "d"})", {{"documents", {R"({"_id": 1, "pad": ")" + std::string(400, 'x') + "\"}"}}});
  for (int i = 0; i < 100; ++i) w->onRequest(1, i, insert.view, "d.c", insert.bytes);
  w->flush();
  auto c = w->counters();
  EXPECT_GT(c.segments, 3u);
  EXPECT_GT(c.dropped_limit, 0u);
  EXPECT_LE(c.bytes, o.max_bytes);
  uint64_t total = 0, records = 0;
  for (uint32_t s = 0; s < c.segments; ++s) {
    std::string path = s ? o.file + "." + std::to_string(s) : o.file;
    shadow::FileHeader h;
    std::vector<std::vector<uint8_t>> payloads;
    records += readAll(path, h, payloads).size();
    EXPECT_EQ(h.segment, s);
    total += fs::file_size(path);
    EXPECT_LE(fs::file_size(path), o.rotate_bytes);
  }
  EXPECT_EQ(records, c.records);
  EXPECT_LE(total, o.max_bytes);
}

}  // namespace
}  // namespace shardscope::shadow
