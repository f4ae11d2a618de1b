// MongoDB's total order over BSON values (canonical type order, then value), as chunk bounds
// and shard-key ranges compare. Works on non-owning bson_value_t views.
#pragma once
#include <bson/bson.h>

namespace shardscope::common {

// Canonical type rank (MinKey -1 < null 5 < numbers 10 < strings 15 < ... < MaxKey 127).
int canonicalType(bson_type_t type);

bool isNumber(bson_type_t type);

// <0, 0, >0 like woCompare. Numbers compare by value across int32/int64/double/decimal;
// NaN equals NaN and sorts below every other number.
int compareValues(const bson_value_t& a, const bson_value_t& b);

// Documents compare element by element: canonical type, then field name, then value; the shorter
// document is smaller.
int compareDocuments(const uint8_t* a, uint32_t a_len, const uint8_t* b, uint32_t b_len);

// Saturating conversion of a numeric value to int64 (NaN -> 0), as MongoDB does before hashing.
int64_t safeNumberLongForHash(const bson_value_t& v);

}  // namespace shardscope::common
