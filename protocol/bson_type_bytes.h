// The element type bytes of BSON as the readers that walk raw bytes name them (protocol/
// bson_stream_check.h, evaluation/document_digest_stream.h, routing/key_document_stream.h): the
// ones libbson 1.23's bson_iter_next reads; any other byte ends iteration, which isValidBson refuses.
#pragma once
#include <cstdint>

namespace shardscope::protocol::bson_type_bytes {

enum : uint8_t {
  kDouble = 0x01, kString = 0x02, kDocument = 0x03, kArray = 0x04, kBinary = 0x05, kUndefined = 0x06,
  kOid = 0x07, kBool = 0x08, kDateTime = 0x09, kNull = 0x0A, kRegex = 0x0B, kDbPointer = 0x0C,
  kCode = 0x0D, kSymbol = 0x0E, kCodeWScope = 0x0F, kInt32 = 0x10, kTimestamp = 0x11, kInt64 = 0x12,
  kDecimal128 = 0x13, kMaxKey = 0x7F, kMinKey = 0xFF,
};
inline constexpr uint8_t kOldBinary = 2;  // binary subtype 2 repeats its length inside the data

inline bool knownType(uint8_t b) { return (b >= kDouble && b <= kDecimal128) || b == kMaxKey || b == kMinKey; }

}  // namespace shardscope::protocol::bson_type_bytes
