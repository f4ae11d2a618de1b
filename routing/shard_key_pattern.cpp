// Shard key patterns and document key extraction (reference/mongo-semantics.md B "Writes").
#include "routing/shard_key_pattern.h"

#include <cstring>

#include "common/json_writer.h"
#include "common/shell_json.h"
#include "protocol/bson_elements.h"
#include "routing/shard_key_hash.h"

namespace shardscope::routing {
namespace {

bool isOneValue(const bson_iter_t& it) {
  switch (bson_iter_type(&it)) {
    case BSON_TYPE_INT32: return bson_iter_int32(&it) == 1;
    case BSON_TYPE_INT64: return bson_iter_int64(&it) == 1;
    case BSON_TYPE_DOUBLE: return bson_iter_double(&it) == 1.0;
    default: return false;
  }
}

bool overlaps(std::string_view a, std::string_view b) {
  if (a.size() > b.size()) std::swap(a, b);
  return b.substr(0, a.size()) == a && (b.size() == a.size() || b[a.size()] == '.');
}

// Walks a dotted path. Arrays anywhere on the path are refused, as mongos refuses them.
KeyExtractStatus findPath(const bson_t& doc, std::string_view path, bson_value_t& out, bool& found) {
  bson_iter_t it;
  found = false;
  if (!bson_iter_init(&it, &doc)) return KeyExtractStatus::Ok;
  while (true) {
    size_t dot = path.find('.');
    std::string_view part = path.substr(0, dot);
    bool matched = false;
    while (bson_iter_next(&it)) {
      uint32_t klen = 0;
      const char* key = bson_iter_key(&it);
      klen = static_cast<uint32_t>(std::strlen(key));
      if (part.size() == klen && std::memcmp(part.data(), key, klen) == 0) {
        matched = true;
        break;
      }
    }
    if (!matched) return KeyExtractStatus::Ok;
    if (bson_iter_type(&it) == BSON_TYPE_ARRAY) return KeyExtractStatus::ArrayValue;
    if (dot == std::string_view::npos) {
      out = *bson_iter_value(&it);
      found = true;
      return KeyExtractStatus::Ok;
    }
    if (bson_iter_type(&it) != BSON_TYPE_DOCUMENT) return KeyExtractStatus::Ok;  // missing below a scalar
    bson_iter_t child;
    if (!bson_iter_recurse(&it, &child)) return KeyExtractStatus::Ok;
    it = child;
    path = path.substr(dot + 1);
  }
}

// findPath for a field at the top level (no dot), walked with BsonElements: the same framing as
// bson_iter_next at a few instructions per element instead of a library call per element. An
// insert's key extraction passed every field of the document this way (issue 29).
KeyExtractStatus findTopLevel(const bson_t& doc, std::string_view name, bson_value_t& out, bool& found) {
  found = false;
  const uint8_t* data = bson_get_data(&doc);
  protocol::BsonElements elements(data, doc.len);
  protocol::BsonElement e;
  while (elements.next(e)) {
    if (e.key != name) continue;
    if (e.type == BSON_TYPE_ARRAY) return KeyExtractStatus::ArrayValue;
    if (protocol::scalarValue(e, out)) {
      found = true;
      return KeyExtractStatus::Ok;
    }
    bson_iter_t it;  // a document, regex, code...: libbson reads the value
    if (!bson_iter_init_from_data_at_offset(&it, data, doc.len, e.offset, static_cast<uint32_t>(e.key.size())))
      return findPath(doc, name, out, found);
    out = *bson_iter_value(&it);
    found = true;
    return KeyExtractStatus::Ok;
  }
  return KeyExtractStatus::Ok;
}

}  // namespace

std::optional<ShardKeyPattern> ShardKeyPattern::parse(const bson_t& key, std::string& error) {
  ShardKeyPattern p;
  bson_iter_t it;
  if (!bson_iter_init(&it, &key)) {
    error = "shard key pattern is not a valid BSON document";
    return std::nullopt;
  }
  while (bson_iter_next(&it)) {
    KeyField f;
    f.path = bson_iter_key(&it);
    if (f.path.empty() || f.path.front() == '.' || f.path.back() == '.' || f.path.find("..") != std::string::npos ||
        f.path.front() == '$') {
      error = "shard key field name '" + f.path + "' is not a valid path";
      return std::nullopt;
    }
    if (bson_iter_type(&it) == BSON_TYPE_UTF8 && std::strcmp(bson_iter_utf8(&it, nullptr), "hashed") == 0) {
      f.hashed = true;
      if (p.hashed_field_ >= 0) {
        error = "shard key pattern has more than one hashed field";
        return std::nullopt;
      }
      p.hashed_field_ = static_cast<int>(p.fields_.size());
    } else if (!isOneValue(it)) {
      error = "shard key field '" + f.path + "' must be 1 or \"hashed\"";
      return std::nullopt;
    }
    for (const auto& other : p.fields_) {
      if (overlaps(other.path, f.path)) {
        error = "shard key fields '" + other.path + "' and '" + f.path + "' overlap";
        return std::nullopt;
      }
    }
    if (f.path == "_id" || f.path.rfind("_id.", 0) == 0) p.contains_id_ = true;
    p.fields_.push_back(std::move(f));
  }
  if (p.fields_.empty()) {
    error = "shard key pattern is empty";
    return std::nullopt;
  }
  if (p.fields_.size() > kMaxKeyFields) {
    error = "shard key pattern has more than 32 fields";
    return std::nullopt;
  }
  return p;
}

std::optional<ShardKeyPattern> ShardKeyPattern::fromJson(std::string_view json, std::string& error) {
  bson_t doc;
  std::string why;
  if (!common::parseShellJson(json, &doc, why)) {  // {customerId: 1} as mongosh takes it
    error = "shard key pattern " + std::string(json) + ": " + why;
    return std::nullopt;
  }
  auto p = parse(doc, error);
  bson_destroy(&doc);
  return p;
}

int ShardKeyPattern::fieldIndex(std::string_view path) const {
  for (size_t i = 0; i < fields_.size(); ++i)
    if (fields_[i].path == path) return static_cast<int>(i);
  return -1;
}

std::string ShardKeyPattern::toJson() const {
  std::string s = "{";
  for (size_t i = 0; i < fields_.size(); ++i) {
    if (i) s += ", ";
    common::JsonWriter::appendString(fields_[i].path, s);  // a client's field name: escaped, U+FFFD
    s += fields_[i].hashed ? ": \"hashed\"" : ": 1";
  }
  return s + "}";
}

KeyExtractStatus ShardKeyPattern::extractFromDocument(const bson_t& doc, KeyPoint& out) const {
  out.size = fields_.size();
  for (size_t i = 0; i < fields_.size(); ++i) {
    bson_value_t v;
    bool found = false;
    const std::string& path = fields_[i].path;
    KeyExtractStatus st = path.find('.') == std::string::npos ? findTopLevel(doc, path, v, found)
                                                              : findPath(doc, path, v, found);
    if (st == KeyExtractStatus::Ok && !found && fields_[i].path == "_id") st = KeyExtractStatus::MissingId;
    if (st != KeyExtractStatus::Ok) {
      // KeyPoint leaves its bounds unconstructed: the fields not reached get a default bound.
      for (size_t j = i; j < out.size; ++j) out.fields[j] = Bound{};
      return st;
    }
    if (fields_[i].hashed) {
      out.fields[i] = Bound::int64(found ? hashShardKeyValue(v) : hashNull());
    } else {
      out.fields[i] = found ? Bound::of(v) : Bound::null();
    }
  }
  return KeyExtractStatus::Ok;
}

void appendKeyDocument(const ShardKeyPattern& pattern, const KeyPoint& key, bson_t* out) {
  for (size_t i = 0; i < pattern.size() && i < key.size; ++i) appendBound(out, pattern.field(i).path.c_str(), key.fields[i]);
}

}  // namespace shardscope::routing
