#include "shadow/capture_format.h"

#include <cstring>

#include "protocol/crc32c.h"
#include "protocol/wire.h"

namespace shardscope::shadow {
namespace {

void put16(std::vector<uint8_t>& out, uint16_t v) {
  out.push_back(static_cast<uint8_t>(v));
  out.push_back(static_cast<uint8_t>(v >> 8));
}
void put32(std::vector<uint8_t>& out, uint32_t v) {
  for (int i = 0; i < 4; ++i) out.push_back(static_cast<uint8_t>(v >> (8 * i)));
}
void put64(std::vector<uint8_t>& out, uint64_t v) {
  for (int i = 0; i < 8; ++i) out.push_back(static_cast<uint8_t>(v >> (8 * i)));
}
uint16_t get16(const uint8_t* p) { return static_cast<uint16_t>(p[0] | (p[1] << 8)); }
uint32_t get32(const uint8_t* p) { return protocol::loadUint32(p); }
uint64_t get64(const uint8_t* p) { return static_cast<uint64_t>(protocol::loadInt64(p)); }

std::string at(uint64_t offset) { return " at offset " + std::to_string(offset); }

}  // namespace

const char* captureModeName(CaptureMode m) { return m == CaptureMode::Full ? "full" : "redacted"; }

const char* recordTypeName(RecordType t) {
  switch (t) {
    case RecordType::ConnectionOpen: return "open";
    case RecordType::ConnectionClose: return "close";
    case RecordType::Request: return "request";
    case RecordType::Reply: return "reply";
    case RecordType::Dropped: return "dropped";
  }
  return "unknown";
}

void encodeFileHeader(const FileHeader& h, std::vector<uint8_t>& out) {
  const size_t start = out.size();
  out.insert(out.end(), std::begin(kCaptureMagic), std::end(kCaptureMagic));
  put16(out, h.version);
  out.push_back(static_cast<uint8_t>(h.mode));
  out.push_back(0);  // reserved
  put32(out, h.segment);
  put64(out, h.capture_id);
  put64(out, static_cast<uint64_t>(h.start_unix_ns));
  put32(out, 0);  // reserved
  put32(out, static_cast<uint32_t>(h.metadata.size()));
  out.insert(out.end(), h.metadata.begin(), h.metadata.end());
  put32(out, protocol::crc32c({out.data() + start, out.size() - start}));
}

void encodeRecord(const Record& r, std::vector<uint8_t>& out, uint16_t version) {
  const size_t start = out.size();
  put32(out, static_cast<uint32_t>(r.payload.size()));
  out.push_back(static_cast<uint8_t>(r.type));
  out.push_back(r.flags);
  put16(out, 0);  // reserved
  put64(out, r.connection_id);
  put64(out, r.time_ns);
  put32(out, static_cast<uint32_t>(r.request_id));
  put32(out, static_cast<uint32_t>(r.response_to));
  put64(out, r.extra);
  if (version >= 2) put64(out, r.sequence);
  out.insert(out.end(), r.payload.begin(), r.payload.end());
  put32(out, protocol::crc32c({out.data() + start, out.size() - start}));
}

size_t CaptureReader::readUpTo(uint8_t* into, size_t n) {
  size_t got = 0;
  while (got < n) {
    size_t k = std::fread(into + got, 1, n - got, file_);
    if (k == 0) break;
    got += k;
  }
  return got;
}

CaptureReader::Status CaptureReader::readHeader(FileHeader& h, std::string& error) {
  buffer_.resize(kFileHeaderFixedSize);
  size_t got = readUpTo(buffer_.data(), kFileHeaderFixedSize);
  if (got < sizeof(kCaptureMagic) || std::memcmp(buffer_.data(), kCaptureMagic, sizeof(kCaptureMagic)) != 0) {
    error = "not a shardscope capture (bad magic)" + at(0);
    return Status::Corrupt;
  }
  if (got < kFileHeaderFixedSize) {
    error = "truncated file header" + at(got);
    return Status::Corrupt;
  }
  const uint8_t* p = buffer_.data();
  h.version = get16(p + 8);
  if (h.version < kOldestReadableVersion || h.version > kCaptureVersion) {
    error = "unsupported capture version " + std::to_string(h.version) + " (this build reads versions " +
            std::to_string(kOldestReadableVersion) + " to " + std::to_string(kCaptureVersion) + ")" + at(8);
    return Status::Corrupt;
  }
  version_ = h.version;
  if (p[10] > 1) {
    error = "unknown capture mode " + std::to_string(p[10]) + at(10);
    return Status::Corrupt;
  }
  h.mode = static_cast<CaptureMode>(p[10]);
  h.segment = get32(p + 12);
  h.capture_id = get64(p + 16);
  h.start_unix_ns = static_cast<int64_t>(get64(p + 24));
  uint32_t metaLen = get32(p + 36);
  if (metaLen > kMaxMetadata) {
    error = "file header metadata length " + std::to_string(metaLen) + " too large" + at(36);
    return Status::Corrupt;
  }
  buffer_.resize(kFileHeaderFixedSize + metaLen + 4);
  got = readUpTo(buffer_.data() + kFileHeaderFixedSize, metaLen + 4);
  if (got < metaLen + 4) {
    error = "truncated file header" + at(kFileHeaderFixedSize + got);
    return Status::Corrupt;
  }
  const size_t crcAt = kFileHeaderFixedSize + metaLen;
  if (protocol::crc32c({buffer_.data(), crcAt}) != get32(buffer_.data() + crcAt)) {
    error = "file header checksum mismatch" + at(0);
    return Status::Corrupt;
  }
  h.metadata.assign(reinterpret_cast<const char*>(buffer_.data() + kFileHeaderFixedSize), metaLen);
  offset_ = crcAt + 4;
  return Status::Ok;
}

CaptureReader::Status CaptureReader::next(Record& r, std::string& error) {
  const size_t headerSize = recordHeaderSize(version_);
  buffer_.resize(headerSize);
  size_t got = readUpTo(buffer_.data(), headerSize);
  if (got == 0) return Status::End;
  if (got < headerSize) {
    error = "truncated record header (" + std::to_string(got) + " of " + std::to_string(headerSize) +
            " bytes)" + at(offset_);
    return Status::Corrupt;
  }
  const uint8_t* p = buffer_.data();
  uint32_t len = get32(p);
  uint8_t type = p[4];
  if (type < static_cast<uint8_t>(RecordType::ConnectionOpen) || type > static_cast<uint8_t>(RecordType::Dropped)) {
    error = "unknown record type " + std::to_string(type) + at(offset_);
    return Status::Corrupt;
  }
  if (len > kMaxRecordPayload) {
    error = "record payload length " + std::to_string(len) + " exceeds the limit" + at(offset_);
    return Status::Corrupt;
  }
  buffer_.resize(headerSize + len + kRecordTrailerSize);
  got = readUpTo(buffer_.data() + headerSize, len + kRecordTrailerSize);
  if (got < len + kRecordTrailerSize) {
    error = "truncated record (" + std::to_string(headerSize + got) + " of " +
            std::to_string(encodedRecordSize(len, version_)) + " bytes)" + at(offset_);
    return Status::Corrupt;
  }
  p = buffer_.data();
  const size_t crcAt = headerSize + len;
  if (protocol::crc32c({p, crcAt}) != get32(p + crcAt)) {
    error = "record checksum mismatch" + at(offset_);
    return Status::Corrupt;
  }
  r.type = static_cast<RecordType>(type);
  r.flags = p[5];
  r.connection_id = get64(p + 8);
  r.time_ns = get64(p + 16);
  r.request_id = static_cast<int32_t>(get32(p + 24));
  r.response_to = static_cast<int32_t>(get32(p + 28));
  r.extra = get64(p + 32);
  r.sequence = version_ >= 2 ? get64(p + 40) : records_;
  r.payload = {p + headerSize, len};
  if ((r.flags & kPayloadWireMessage) &&
      (len < protocol::kHeaderSize || static_cast<uint32_t>(protocol::loadInt32(p + headerSize)) != len)) {
    error = "record payload is not one whole wire message" + at(offset_);
    return Status::Corrupt;
  }
  offset_ += crcAt + kRecordTrailerSize;
  ++records_;
  return Status::Ok;
}

}  // namespace shardscope::shadow
