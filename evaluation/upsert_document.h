// The document an upsert creates when it matches nothing, built as the server builds it: the
// filter's equality fields (top level and inside $and), then the update's $setOnInsert, $set and
// the other operators that set a value on a new document ($inc, $min, $max), each later one
// winning on the same path; dotted paths become nested documents. An update pipeline's
// $set/$addFields stages set the fields they give a literal value, its $unset stages drop theirs. A replacement upsert creates
// the replacement, with the filter's _id when the replacement has none. Without a `_id` the
// server adds one: the reply's `upserted` carries it (see withId).
#pragma once
#include <bson/bson.h>

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace shardscope::evaluation {

class UpsertDocumentBuilder {
 public:
  // `u` points at the statement's update ("u" / "update"). Writes BSON into `out` (memory reused);
  // false when there is nothing to build from (no filter, no update).
  bool build(const bson_t* filter, const bson_iter_t* u, std::string& out);
  // Whether the update is a replacement document (not operators, not a pipeline).
  static bool isReplacement(const bson_iter_t& u);
  // `doc` with `_id` (the element `id_element`: type, key "_id", value) first when it has none.
  static void withId(std::string_view doc, const bson_iter_t& id, std::string& out);

 private:
  struct Entry {
    std::string_view path;
    uint8_t type = 0;
    const uint8_t* value = nullptr;
    uint32_t len = 0;
  };
  void collectFilter(const bson_t& filter, int depth);
  void collectOperator(const bson_iter_t& fields);
  void collectPipeline(const bson_iter_t& pipeline);
  bool unsetPaths(const bson_iter_t& stage);
  void add(std::string_view path, const bson_iter_t& value);
  void write(size_t depth, const std::vector<size_t>& members, std::string& out);

  std::vector<Entry> entries_;
  std::vector<std::vector<size_t>> groups_;  // scratch per nesting depth
};

}  // namespace shardscope::evaluation
