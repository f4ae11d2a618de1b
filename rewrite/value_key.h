// The canonical key of a lookup value for equality, as MongoDB compares: numerically equal
// int32, int64 and double values share one key across the whole range (-2^63 as a long and as a
// double, 9.21e18 as a long and as a double). Decimal128 values get no key: how MongoDB compares a
// decimal with a double that has no exact 34-digit decimal form is not something the sidecar can
// decide, so a decimal lookup is never rewritten, and a decimal seen in a document makes every
// number it might equal ambiguous (appendDecimalNeighbours).
#pragma once
#include <bson/bson.h>

#include <string>

namespace shardscope::rewrite {

// Empty for values that cannot be mapped: null, NaN, decimals, arrays, documents, regexes,
// MinKey/MaxKey, undefined (equality on them is not one stored value, or not decidable).
std::string canonicalValueKey(const bson_iter_t& value);

// Appends to `out` (as "0", "1") the mappable numbers a Decimal128 may compare equal to: the
// double nearest to it (whichever way a server rounds between the two, no other double can be
// equal) and the int64 it equals exactly, if any. Appends nothing for NaN or a non-decimal.
void appendDecimalNeighbours(const bson_iter_t& value, bson_t& out);

}  // namespace shardscope::rewrite
