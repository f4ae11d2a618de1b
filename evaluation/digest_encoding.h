// How a digest (document_digest.h) writes its numbers and cut strings: one definition for the
// digester of a whole document and the one of a document in pieces (document_digest_stream.h),
// whose outputs must be byte for byte the same.
#pragma once
#include <bson/bson.h>

#include <cstddef>
#include <cstdint>
#include <string>

#include "common/name_text.h"

namespace shardscope::evaluation::digest_encoding {

inline constexpr size_t kNoteBytes = 9;  // a field's hash (8) and whether its value is whole (1)

inline void put32(std::string& out, uint32_t v) {
  v = BSON_UINT32_TO_LE(v);
  out.append(reinterpret_cast<const char*>(&v), 4);
}

inline void put64(std::string& out, uint64_t v) {
  v = BSON_UINT64_TO_LE(v);
  out.append(reinterpret_cast<const char*>(&v), 8);
}

// At most `max` bytes of `s`, cut before a UTF-8 sequence that would not fit whole (reads s[max]).
inline size_t utf8Prefix(const char* s, size_t len, size_t max) { return common::utf8Prefix({s, len}, max).size(); }

// A string value (length, bytes, NUL) of the first `max` bytes of `s`.
inline void putStringPrefix(std::string& out, const char* s, size_t len, size_t max) {
  const size_t n = utf8Prefix(s, len, max);
  put32(out, static_cast<uint32_t>(n + 1));
  out.append(s, n);
  out.push_back('\0');
}

}  // namespace shardscope::evaluation::digest_encoding
