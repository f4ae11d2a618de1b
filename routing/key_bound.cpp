// Bound ordering: type edges sit between canonical type brackets so a range like {$gt: "m"} can
// end "after every string" without inventing a value.
#include "routing/key_bound.h"

#include <cstring>

#include "common/bson_order.h"

namespace shardscope::routing {

Bound Bound::of(const bson_value_t& v) {
  Bound b;
  b.value = v;
  return b;
}
Bound Bound::minKey() {
  Bound b;
  b.value.value_type = BSON_TYPE_MINKEY;
  return b;
}
Bound Bound::maxKey() {
  Bound b;
  b.value.value_type = BSON_TYPE_MAXKEY;
  return b;
}
Bound Bound::null() {
  Bound b;
  b.value.value_type = BSON_TYPE_NULL;
  return b;
}
Bound Bound::int64(int64_t v) {
  Bound b;
  b.value.value_type = BSON_TYPE_INT64;
  b.value.value.v_int64 = v;
  return b;
}
Bound Bound::dbl(double v) {
  Bound b;
  b.value.value_type = BSON_TYPE_DOUBLE;
  b.value.value.v_double = v;
  return b;
}
Bound Bound::typeStart(int canonical_type) {
  Bound b;
  b.edge = -1;
  b.type_class = static_cast<int16_t>(canonical_type);
  return b;
}
Bound Bound::typeEnd(int canonical_type) {
  Bound b;
  b.edge = 1;
  b.type_class = static_cast<int16_t>(canonical_type);
  return b;
}

int compareBound(const Bound& a, const Bound& b) {
  if (a.edge == 0 && b.edge == 0) return common::compareValues(a.value, b.value);
  int ca = a.edge ? a.type_class : common::canonicalType(a.value.value_type);
  int cb = b.edge ? b.type_class : common::canonicalType(b.value.value_type);
  if (ca != cb) return ca < cb ? -1 : 1;
  if (a.edge != b.edge) return a.edge < b.edge ? -1 : 1;
  return 0;
}

int compareKeys(std::span<const Bound> a, std::span<const Bound> b) {
  size_t n = a.size() < b.size() ? a.size() : b.size();
  for (size_t i = 0; i < n; ++i) {
    int c = compareBound(a[i], b[i]);
    if (c != 0) return c;
  }
  return 0;
}

void appendBound(bson_t* doc, const char* name, const Bound& b) {
  int len = static_cast<int>(std::strlen(name));
  if (b.edge < 0) {
    bson_append_minkey(doc, name, len);
  } else if (b.edge > 0) {
    bson_append_maxkey(doc, name, len);
  } else {
    bson_append_value(doc, name, len, &b.value);
  }
}

}  // namespace shardscope::routing
