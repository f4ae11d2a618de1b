// A lookup-rewrite rule (a lookup vindex, in Vitess's words): in namespace `ns`, the value of
// `lookup_field` determines the values of `add_fields` (a shard-key prefix), so a filter that pins
// the lookup field can also pin them, and mongos targets one shard instead of all.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace shardscope::rewrite {

struct LookupRule {
  std::string ns;                      // "shop.orders"
  std::string lookup_field;            // "orderId"
  std::vector<std::string> add_fields; // {"customerId"}
  std::string mapping_file;            // JSON lines loaded at start (optional)
  std::string mapping_collection;      // "db.coll" read through in the cluster (optional)
  std::string mapping_uri;             // where that collection lives (default: the upstream)
  uint32_t capacity = 1'000'000;       // mappings kept in memory, then least recently used evicted
  uint64_t max_bytes = uint64_t{64} << 20;  // and the bytes they may hold (MappingStore), likewise
  // One document per lookup value (a unique index on it, simple collation, not partial), so a read
  // of one value keeps its answer whatever part it asks for (findOne, a limit) and a sort on the
  // lookup field has no ties (kOrderDependentRefusal). Assumed, as an order id is, until what the
  // sidecar sees refutes it (LookupIndex::refuteUnique); `unique=false` declares several documents
  // per value from the start.
  bool unique = true;
};

// Parses "shop.orders: orderId -> customerId[,orderDate] [file=PATH] [collection=DB.COLL] [uri=MONGODB_URI]
// [capacity=N] [max_bytes=N[k|m|g]] [unique=true|false]"; the added fields may also be written as a key, as key candidates are
// ("shop.orders: orderId -> {customerId: 1, orderDate: 1}"). `file=` names JSON lines, one
// {lookupField: v, addField: w, ...} document per line (JSON, Extended JSON or mongosh syntax).
// Returns false with `error` naming what is wrong.
bool parseLookupRule(const std::string& spec, LookupRule& out, std::string& error);

}  // namespace shardscope::rewrite
