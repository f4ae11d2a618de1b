// A delete statement's `limit` as mongos and the server read it: the element's value as a number
// (a double; an element of any other type reads as 0), which must be 0 (every matching document)
// or 1 (one document). Any other value fails the command (FailedToParse), and so does a statement
// without a limit (a required field). So `limit: true`, `null` or "1" delete every match.
#pragma once
#include <bson/bson.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>

#include "protocol/bson_elements.h"

namespace shardscope::protocol {

enum class DeleteLimit : uint8_t { All, One, Invalid };

// The limit's value: a number's as a double (a Decimal128 converted), 0 for any other type.
// `type` and `value`: the element's type byte and value bytes.
inline double deleteLimitValue(uint8_t type, const uint8_t* value) {
  double limit = 0;
  if (type == BSON_TYPE_DOUBLE) {
    std::memcpy(&limit, value, sizeof limit);
  } else if (type == BSON_TYPE_INT32 || type == BSON_TYPE_INT64) {
    limit = static_cast<double>(asInt64(type, value));
  } else if (type == BSON_TYPE_DECIMAL128) {  // rare: through its text ("1", "1.0", "1E+0", "NaN"...)
    bson_decimal128_t d;
    std::memcpy(&d.low, value, 8);
    std::memcpy(&d.high, value + 8, 8);
    d.low = BSON_UINT64_FROM_LE(d.low);
    d.high = BSON_UINT64_FROM_LE(d.high);
    char text[BSON_DECIMAL128_STRING];
    bson_decimal128_to_string(&d, text);
    limit = std::strtod(text, nullptr);
  }
  return limit;
}

inline DeleteLimit deleteLimitOf(double limit) {
  if (limit == 0) return DeleteLimit::All;
  return limit == 1 ? DeleteLimit::One : DeleteLimit::Invalid;
}

// `present` false: the statement has no limit.
inline DeleteLimit readDeleteLimit(bool present, uint8_t type, const uint8_t* value) {
  return present ? deleteLimitOf(deleteLimitValue(type, value)) : DeleteLimit::Invalid;
}

// The same from a libbson iterator at the element (nullptr: no limit).
inline DeleteLimit readDeleteLimit(const bson_iter_t* it) {
  if (!it) return DeleteLimit::Invalid;
  return readDeleteLimit(true, static_cast<uint8_t>(bson_iter_type(it)), it->raw + it->d1);
}

}  // namespace shardscope::protocol
