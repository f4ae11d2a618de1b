// A shard key pattern ({customerId: 1, orderDate: 1}, {_id: "hashed"}, {region: 1, id: "hashed"}),
// built from a BSON document independently of any routing table (stats and key evaluation use it
// for candidate keys), and extraction of a document's shard-key value.
#pragma once
#include <bson/bson.h>

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "routing/key_bound.h"

namespace shardscope::routing {

struct KeyField {
  std::string path;  // dotted path, e.g. "customer.id"
  bool hashed = false;
};

enum class KeyExtractStatus {
  Ok,
  ArrayValue,  // mongos: "Shard key cannot contain array values or array descendants"
  MissingId,   // _id is part of the key but the document has none
};

class ShardKeyPattern {
 public:
  // Accepts 1 (ascending) or "hashed" per field; at most one hashed field; no duplicate or
  // overlapping paths; at most kMaxKeyFields fields. On failure returns nullopt and says why.
  static std::optional<ShardKeyPattern> parse(const bson_t& key, std::string& error);
  static std::optional<ShardKeyPattern> fromJson(std::string_view json, std::string& error);

  size_t size() const { return fields_.size(); }
  const KeyField& field(size_t i) const { return fields_[i]; }
  const std::vector<KeyField>& fields() const { return fields_; }
  int hashedField() const { return hashed_field_; }  // -1 when none
  bool hasHashedField() const { return hashed_field_ >= 0; }
  bool containsId() const { return contains_id_; }
  // Index of the key field whose path is exactly `path`, or -1.
  int fieldIndex(std::string_view path) const;
  std::string toJson() const;

  // The shard-key value of a document being inserted (or a replacement): missing fields count as
  // null, hashed fields are hashed. Values are views into `doc`.
  KeyExtractStatus extractFromDocument(const bson_t& doc, KeyPoint& out) const;

 private:
  std::vector<KeyField> fields_;
  int hashed_field_ = -1;
  bool contains_id_ = false;
};

// Builds {field: value, ...} for a key value (hashed fields as NumberLong).
void appendKeyDocument(const ShardKeyPattern& pattern, const KeyPoint& key, bson_t* out);

}  // namespace shardscope::routing
