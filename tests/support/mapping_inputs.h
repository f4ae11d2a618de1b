// Lookup-mapping entries and padded ids for the mapping's tests (the unit tests bound it in bytes,
// tests/heap checks those bytes against the allocator): one definition for both.
#pragma once
#include <bson/bson.h>

#include <algorithm>
#include <string>

#include "rewrite/lookup_mapping.h"
#include "tests/support/bson_builders.h"

namespace shardscope::testing {

// The canonical key and added value a document {orderId, customerId} gives (as learnFromDocument).
struct MappingEntry {
  std::string key, value, canon;
};

inline MappingEntry mappingEntry(const std::string& orderId, const std::string& customerId) {
  MappingEntry m;
  m.key = "s" + orderId;
  Doc v(R"({"customerId": ")" + customerId + R"("})");
  m.value.assign(reinterpret_cast<const char*>(bson_get_data(v.get())), v.get()->len);
  m.canon = rewrite::canonicalValues(v.get());
  return m;
}

// `prefix` + i, padded with 'x' to `length` bytes.
inline std::string padded(const char* prefix, size_t i, size_t length) {
  std::string s = prefix + std::to_string(i);
  s.resize(std::max(length, s.size()), 'x');
  return s;
}

}  // namespace shardscope::testing
