// Wire-level constants and the 16-byte message header of the MongoDB protocol.
#pragma once
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string_view>

namespace shardscope::protocol {

enum class OpCode : int32_t {
  Reply = 1,
  Update = 2001,
  Insert = 2002,
  Query = 2004,
  GetMore = 2005,
  Delete = 2006,
  KillCursors = 2007,
  Compressed = 2012,
  Msg = 2013,
};

constexpr size_t kHeaderSize = 16;
// mongos advertises maxMessageSizeBytes = 48000000 (decimal MB).
constexpr uint32_t kDefaultMaxMessageSize = 48'000'000;

struct MsgHeader {
  int32_t messageLength = 0;
  int32_t requestId = 0;
  int32_t responseTo = 0;
  int32_t opCode = 0;
};

inline int32_t loadInt32(const uint8_t* p) {
  uint32_t v;
  std::memcpy(&v, p, 4);  // the wire is little-endian, as is every platform we build for
  return static_cast<int32_t>(v);
}
inline uint32_t loadUint32(const uint8_t* p) { return static_cast<uint32_t>(loadInt32(p)); }
inline int64_t loadInt64(const uint8_t* p) {
  int64_t v;
  std::memcpy(&v, p, 8);
  return v;
}
inline void storeInt32(uint8_t* p, int32_t v) { std::memcpy(p, &v, 4); }
inline void storeUint32(uint8_t* p, uint32_t v) { std::memcpy(p, &v, 4); }
inline void storeInt64(uint8_t* p, int64_t v) { std::memcpy(p, &v, 8); }

inline MsgHeader readHeader(const uint8_t* p) {
  return {loadInt32(p), loadInt32(p + 4), loadInt32(p + 8), loadInt32(p + 12)};
}
inline void writeHeader(uint8_t* p, const MsgHeader& h) {
  storeInt32(p, h.messageLength);
  storeInt32(p + 4, h.requestId);
  storeInt32(p + 8, h.responseTo);
  storeInt32(p + 12, h.opCode);
}

bool isKnownOpCode(int32_t op);
std::string_view opCodeName(int32_t op);

}  // namespace shardscope::protocol
