// The namespace a command is filed under on every surface (statistics, evaluation, rewrite rules,
// explain): "db.collection" for the commands that name their collection; for bulkWrite (run on
// admin, its namespaces listed in nsInfo and referred to by index from each op) the namespace its
// first op writes. A bulkWrite over several namespaces is filed under its first op's.
#pragma once
#include <bson/bson.h>

#include <cstdint>
#include <string>
#include <string_view>

#include "common/command_fields.h"

namespace shardscope::common {

// A bulkWrite op ({insert|update|delete: nsInfo index, ...}) as its first element says: `kind` is
// 'i', 'u' or 'd' (0 for any other name), `index` the nsInfo index (-1 when it is not a number).
struct BulkWriteOp {
  char kind = 0;
  int64_t index = -1;
};
inline BulkWriteOp readBulkWriteOp(const bson_t& op) {
  BulkWriteOp out;
  bson_iter_t it;
  if (!bson_iter_init(&it, &op) || !bson_iter_next(&it)) return out;
  const std::string_view kind = bson_iter_key(&it);
  if (kind == "insert" || kind == "update" || kind == "delete") out.kind = kind[0];
  if (BSON_ITER_HOLDS_NUMBER(&it)) out.index = bson_iter_as_int64(&it);
  return out;
}

// nsInfo[index].ns into `buffer`; empty when there is no such entry.
inline std::string_view bulkWriteNamespace(const protocol::CommandView& cmd, int64_t index, std::string& buffer) {
  buffer.clear();
  if (index < 0) return {};
  int64_t at = 0;
  forEachStatement(cmd, "nsInfo", [&](const bson_t& info) {
    if (at++ < index) return true;
    bson_iter_t it;
    uint32_t len = 0;
    if (bson_iter_init_find(&it, &info, "ns") && BSON_ITER_HOLDS_UTF8(&it)) {
      const char* s = bson_iter_utf8(&it, &len);
      buffer.assign(s, len);
    }
    return false;
  });
  return buffer;
}

inline std::string_view commandNamespace(const protocol::CommandView& cmd, std::string& buffer) {
  if (cmd.traits.kind != protocol::CommandKind::BulkWrite) return cmd.ns(buffer);
  int64_t index = -1;
  forEachStatement(cmd, "ops", [&](const bson_t& op) {
    const BulkWriteOp first = readBulkWriteOp(op);
    index = first.kind ? first.index : -1;
    return false;
  });
  return bulkWriteNamespace(cmd, index, buffer);
}

}  // namespace shardscope::common
