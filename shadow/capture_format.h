// The capture file format (docs/capture-format.md): a versioned file header, then length-prefixed
// records (type, connection id, timestamp, request ids, payload) each closed by a CRC-32C, so a
// truncated or corrupt file is detected at the exact offset where it breaks.
#pragma once
#include <cstdint>
#include <cstdio>
#include <span>
#include <string>
#include <vector>

namespace shardscope::shadow {

constexpr uint8_t kCaptureMagic[8] = {0x89, 'S', 'S', 'C', 'A', 'P', '\r', '\n'};
// Version 2 added the global sequence number to every record (replay keeps the order of writes
// across connections with it). Version 1 files are still read: their sequence is the record's
// position in the capture, which is the order the writer received them.
constexpr uint16_t kCaptureVersion = 2;
constexpr uint16_t kOldestReadableVersion = 1;
constexpr size_t kFileHeaderFixedSize = 40;   // magic .. metadata length, before metadata and CRC
constexpr size_t kRecordHeaderSizeV1 = 40;    // length .. extra, before the payload
constexpr size_t kRecordHeaderSize = 48;      // version 2: length .. extra, sequence
inline size_t recordHeaderSize(uint16_t version) { return version == 1 ? kRecordHeaderSizeV1 : kRecordHeaderSize; }
constexpr size_t kRecordTrailerSize = 4;      // CRC-32C of header + payload
constexpr uint32_t kMaxRecordPayload = 64u << 20;
constexpr uint32_t kMaxMetadata = 1u << 20;

enum class CaptureMode : uint8_t { Redacted = 0, Full = 1 };
const char* captureModeName(CaptureMode m);

enum class RecordType : uint8_t {
  ConnectionOpen = 1,
  ConnectionClose = 2,
  Request = 3,  // full: the uncompressed OP_MSG / OP_QUERY as sent; redacted: a BSON summary
  Reply = 4,    // full: the uncompressed reply message; redacted: a BSON summary; extra = latency ns
  Dropped = 5,  // the writer's queue overflowed: `extra` records were lost just before this one
};
const char* recordTypeName(RecordType t);

// Record flag bits.
constexpr uint8_t kPayloadWireMessage = 1u << 0;  // payload is a whole wire message
constexpr uint8_t kPayloadRedactedBson = 1u << 1; // payload is one BSON document (redacted form)

struct FileHeader {
  uint16_t version = kCaptureVersion;
  CaptureMode mode = CaptureMode::Redacted;
  uint32_t segment = 0;        // rotation: 0 for FILE, n for FILE.n
  uint64_t capture_id = 0;     // random, the same in every segment of one capture
  int64_t start_unix_ns = 0;   // wall clock when the capture started (record times are relative)
  std::string metadata;        // JSON object text (writer version, options)
};

struct Record {
  RecordType type = RecordType::Request;
  uint8_t flags = 0;
  uint64_t connection_id = 0;
  uint64_t time_ns = 0;        // monotonic ns since the capture started
  int32_t request_id = 0;
  int32_t response_to = 0;
  uint64_t extra = 0;          // Request: shape id (common::shapeId); Reply: latency ns; Dropped: records lost
  std::span<const uint8_t> payload;
  uint64_t sequence = 0;       // global order across all connections (requests: the order they went upstream)
};

// Append the encoded form to `out`.
void encodeFileHeader(const FileHeader& header, std::vector<uint8_t>& out);
// `version` 1 only for tests of old captures.
void encodeRecord(const Record& record, std::vector<uint8_t>& out, uint16_t version = kCaptureVersion);
inline size_t encodedRecordSize(size_t payload, uint16_t version = kCaptureVersion) {
  return recordHeaderSize(version) + payload + kRecordTrailerSize;
}

// Reads a capture segment sequentially from a FILE*. Never throws; every error names the byte
// offset where the file stops being valid. Records (and their payload views) are valid until the
// next call.
class CaptureReader {
 public:
  enum class Status { Ok, End, Corrupt };

  explicit CaptureReader(FILE* file) : file_(file) {}
  Status readHeader(FileHeader& header, std::string& error);
  Status next(Record& record, std::string& error);
  // Offset of the next unread byte (after a Corrupt: where the bad record starts).
  uint64_t offset() const { return offset_; }

 private:
  size_t readUpTo(uint8_t* into, size_t n);

  FILE* file_;
  uint16_t version_ = kCaptureVersion;
  uint64_t offset_ = 0;
  uint64_t records_ = 0;  // read so far: a version 1 record's sequence
  std::vector<uint8_t> buffer_;
};

}  // namespace shardscope::shadow
