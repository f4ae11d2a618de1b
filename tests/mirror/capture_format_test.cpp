// The capture file format: encode/decode round trips, and truncation or corruption reported at the
// offset where the file breaks.
#include <gtest/gtest.h>

#include <cstdio>

#include "shadow/capture_format.h"
#include "tests/support/bson_builders.h"

namespace shardscope::shadow {
namespace {

struct MemFile {
  explicit MemFile(std::vector<uint8_t>& bytes) : f(fmemopen(bytes.data(), bytes.size(), "rb")) {}
  ~MemFile() {
    if (f) std::fclose(f);
  }
  FILE* f;
};

std::vector<uint8_t> sampleFile(std::vector<size_t>* recordOffsets = nullptr) {
  std::vector<uint8_t> out;
  FileHeader h;
  h.mode = CaptureMode::Full;
  h.segment = 2;
  h.capture_id = 0x1122334455667788ull;
  h.start_unix_ns = 1700000000123456789ll;
  h.metadata = R"({"writer":"test"})";
  encodeFileHeader(h, out);
  auto msg = testing::opMsg(R"({"find": "c", "filter": {"a": 1}, "$db": "d"})", {}, 0, 42);
  Record open{RecordType::ConnectionOpen, 0, 5, 10, 0, 0, 0, {}};
  Record req{RecordType::Request, kPayloadWireMessage, 5, 20, 42, 0, 0, msg};
  Record rep{RecordType::Reply, kPayloadWireMessage, 5, 30, 9, 42, 777, msg};
  Record close{RecordType::ConnectionClose, 0, 5, 40, 0, 0, 0, {}};
  for (const Record* r : {&open, &req, &rep, &close}) {
    if (recordOffsets) recordOffsets->push_back(out.size());
    encodeRecord(*r, out);
  }
  return out;
}

TEST(CaptureFormat, RoundTrip) {
  auto bytes = sampleFile();
  MemFile m(bytes);
  CaptureReader reader(m.f);
  FileHeader h;
  std::string error;
  ASSERT_EQ(reader.readHeader(h, error), CaptureReader::Status::Ok) << error;
  EXPECT_EQ(h.version, kCaptureVersion);
  EXPECT_EQ(h.mode, CaptureMode::Full);
  EXPECT_EQ(h.segment, 2u);
  EXPECT_EQ(h.capture_id, 0x1122334455667788ull);
  EXPECT_EQ(h.start_unix_ns, 1700000000123456789ll);
  EXPECT_EQ(h.metadata, R"({"writer":"test"})");
  Record r;
  ASSERT_EQ(reader.next(r, error), CaptureReader::Status::Ok) << error;
  EXPECT_EQ(r.type, RecordType::ConnectionOpen);
  EXPECT_EQ(r.connection_id, 5u);
  ASSERT_EQ(reader.next(r, error), CaptureReader::Status::Ok) << error;
  EXPECT_EQ(r.type, RecordType::Request);
  EXPECT_EQ(r.request_id, 42);
  EXPECT_EQ(r.time_ns, 20u);
  EXPECT_EQ(protocol::readHeader(r.payload.data()).requestId, 42);
  ASSERT_EQ(reader.next(r, error), CaptureReader::Status::Ok) << error;
  EXPECT_EQ(r.type, RecordType::Reply);
  EXPECT_EQ(r.response_to, 42);
  EXPECT_EQ(r.extra, 777u);
  ASSERT_EQ(reader.next(r, error), CaptureReader::Status::Ok) << error;
  EXPECT_EQ(r.type, RecordType::ConnectionClose);
  EXPECT_EQ(reader.next(r, error), CaptureReader::Status::End);
  EXPECT_EQ(reader.offset(), bytes.size());
}

// Reads to the end; returns the error text of the first Corrupt.
std::string firstError(std::vector<uint8_t> bytes, size_t* goodRecords = nullptr) {
  MemFile m(bytes);
  if (!m.f) return "fmemopen failed";
  CaptureReader reader(m.f);
  FileHeader h;
  std::string error;
  if (reader.readHeader(h, error) != CaptureReader::Status::Ok) return error;
  Record r;
  size_t n = 0;
  for (;;) {
    auto s = reader.next(r, error);
    if (s == CaptureReader::Status::End) return "";
    if (s == CaptureReader::Status::Corrupt) break;
    ++n;
  }
  if (goodRecords) *goodRecords = n;
  return error;
}

TEST(CaptureFormat, TruncationAtEveryByteIsReportedAtTheRecordStart) {
  std::vector<size_t> offsets;
  auto bytes = sampleFile(&offsets);
  for (size_t cut = offsets[0] + 1; cut < bytes.size(); ++cut) {
    std::vector<uint8_t> truncated(bytes.begin(), bytes.begin() + cut);
    size_t brokenRecord = 0;
    while (brokenRecord + 1 < offsets.size() && offsets[brokenRecord + 1] <= cut) ++brokenRecord;
    if (cut == offsets[brokenRecord]) continue;  // a clean record boundary is a valid (shorter) file
    size_t good = 99;
    std::string error = firstError(truncated, &good);
    EXPECT_NE(error.find("truncated"), std::string::npos) << cut << ": " << error;
    EXPECT_NE(error.find("at offset " + std::to_string(offsets[brokenRecord])), std::string::npos) << cut << ": " << error;
    EXPECT_EQ(good, brokenRecord) << cut;
  }
}

TEST(CaptureFormat, FlippedByteFailsTheChecksumOfThatRecord) {
  std::vector<size_t> offsets;
  auto bytes = sampleFile(&offsets);
  auto corrupt = bytes;
  corrupt[offsets[2] + kRecordHeaderSize + 20] ^= 0x40;  // inside the reply's payload
  size_t good = 0;
  std::string error = firstError(corrupt, &good);
  EXPECT_NE(error.find("checksum"), std::string::npos) << error;
  EXPECT_NE(error.find("at offset " + std::to_string(offsets[2])), std::string::npos) << error;
  EXPECT_EQ(good, 2u);
}

TEST(CaptureFormat, HugeLengthAndUnknownTypeAreRefused) {
  std::vector<size_t> offsets;
  auto bytes = sampleFile(&offsets);
  auto a = bytes;
  protocol::storeUint32(a.data() + offsets[1], 0xFFFFFFF0u);
  EXPECT_NE(firstError(a).find("exceeds the limit at offset " + std::to_string(offsets[1])), std::string::npos);
  auto b = bytes;
  b[offsets[3] + 4] = 99;
  EXPECT_NE(firstError(b).find("unknown record type 99 at offset " + std::to_string(offsets[3])), std::string::npos);
}

TEST(CaptureFormat, BadMagicVersionAndHeaderChecksum) {
  auto bytes = sampleFile();
  auto a = bytes;
  a[1] = 'X';
  EXPECT_NE(firstError(a).find("bad magic"), std::string::npos);
  auto b = bytes;
  b[8] = 9;
  EXPECT_NE(firstError(b).find("unsupported capture version 9"), std::string::npos);
  b[8] = 3;  // a version newer than this build: refused clearly, not misread
  EXPECT_NE(firstError(b).find("unsupported capture version 3"), std::string::npos);
  b[8] = 0;
  EXPECT_NE(firstError(b).find("unsupported capture version 0"), std::string::npos);
  auto c = bytes;
  c[45] ^= 1;  // metadata
  EXPECT_NE(firstError(c).find("file header checksum"), std::string::npos);
  std::vector<uint8_t> d(bytes.begin(), bytes.begin() + 20);
  EXPECT_NE(firstError(d).find("truncated file header"), std::string::npos);
}

}  // namespace
}  // namespace shardscope::shadow

namespace shardscope::shadow {
namespace {

// Captures written before the sequence number existed (version 1) stay readable: their records'
// order in the file is their sequence.
TEST(CaptureFormat, Version1CapturesAreStillRead) {
  std::vector<uint8_t> out;
  FileHeader h;
  h.version = 1;
  h.mode = CaptureMode::Full;
  encodeFileHeader(h, out);
  auto msg = testing::opMsg(R"({"insert": "c", "documents": [], "$db": "d"})", {}, 0, 7);
  for (uint64_t conn : {3u, 4u, 3u}) {
    Record req{RecordType::Request, kPayloadWireMessage, conn, 20, 7, 0, 0, msg};
    req.sequence = 999;  // not written in version 1
    encodeRecord(req, out, 1);
  }
  EXPECT_EQ(out.size(), kFileHeaderFixedSize + h.metadata.size() + 4 + 3 * encodedRecordSize(msg.size(), 1));
  MemFile m(out);
  CaptureReader reader(m.f);
  FileHeader got;
  std::string error;
  ASSERT_EQ(reader.readHeader(got, error), CaptureReader::Status::Ok) << error;
  EXPECT_EQ(got.version, 1);
  Record r;
  for (uint64_t i = 0; i < 3; ++i) {
    ASSERT_EQ(reader.next(r, error), CaptureReader::Status::Ok) << error;
    EXPECT_EQ(r.sequence, i);
    EXPECT_EQ(protocol::readHeader(r.payload.data()).requestId, 7);
  }
  EXPECT_EQ(reader.next(r, error), CaptureReader::Status::End);
}

TEST(CaptureFormat, Version2CarriesTheSequence) {
  std::vector<uint8_t> out;
  FileHeader h;
  encodeFileHeader(h, out);
  Record a{RecordType::ConnectionOpen, 0, 1, 5, 0, 0, 0, {}};
  a.sequence = 41;
  encodeRecord(a, out);
  MemFile m(out);
  CaptureReader reader(m.f);
  FileHeader got;
  std::string error;
  ASSERT_EQ(reader.readHeader(got, error), CaptureReader::Status::Ok) << error;
  EXPECT_EQ(got.version, 2);
  Record r;
  ASSERT_EQ(reader.next(r, error), CaptureReader::Status::Ok) << error;
  EXPECT_EQ(r.sequence, 41u);
}

}  // namespace
}  // namespace shardscope::shadow
