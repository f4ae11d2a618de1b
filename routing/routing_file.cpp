// Routing file loader: JSON (or mongosh syntax) via common::parseShellJson; YAML converted to JSON first so
// both formats accept the same {"$minKey": 1} / {"$numberLong": "..."} spellings.
#include "routing/routing_file.h"

#include <yaml-cpp/yaml.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

#include "common/json_writer.h"
#include "common/shell_json.h"

namespace shardscope::routing {
namespace {

bool isInteger(const std::string& s) {
  size_t i = (s[0] == '-' || s[0] == '+') ? 1 : 0;
  if (i >= s.size() || s.size() - i > 18) return false;
  for (; i < s.size(); ++i)
    if (s[i] < '0' || s[i] > '9') return false;
  return true;
}

bool isFloat(const std::string& s) {
  char* end = nullptr;
  std::strtod(s.c_str(), &end);
  return end && *end == 0 && s.find_first_of("0123456789") != std::string::npos &&
         s.find_first_not_of("0123456789+-.eE") == std::string::npos;
}

void emit(const YAML::Node& n, std::string& out, int depth) {
  if (depth > 64) throw YAML::Exception(YAML::Mark::null_mark(), "YAML nests too deeply");
  switch (n.Type()) {
    case YAML::NodeType::Map: {
      out += '{';
      bool first = true;
      for (const auto& kv : n) {
        if (!first) out += ',';
        first = false;
        common::JsonWriter::appendString(kv.first.as<std::string>(), out, common::JsonWriter::InvalidUtf8::Keep);
        out += ':';
        emit(kv.second, out, depth + 1);
      }
      out += '}';
      return;
    }
    case YAML::NodeType::Sequence: {
      out += '[';
      bool first = true;
      for (const auto& e : n) {
        if (!first) out += ',';
        first = false;
        emit(e, out, depth + 1);
      }
      out += ']';
      return;
    }
    case YAML::NodeType::Scalar: {
      const std::string& s = n.Scalar();
      if (n.Tag() != "!" && !s.empty()) {  // plain (unquoted) scalars are typed
        if (s == "true" || s == "false") return void(out += s);
        if (s == "null" || s == "~") return void(out += "null");
        if (isInteger(s) || isFloat(s)) return void(out += s);
      }
      common::JsonWriter::appendString(s, out, common::JsonWriter::InvalidUtf8::Keep);  // the reader judges the bytes
      return;
    }
    default: out += "null"; return;
  }
}

bool readFile(const std::string& path, std::string& text, std::string& error) {
  errno = 0;
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    error = "cannot read file " + path + ": " + (errno ? std::strerror(errno) : "open failed");
    return false;
  }
  std::ostringstream ss;
  ss << in.rdbuf();
  text = ss.str();
  return true;
}

bool endsWith(const std::string& s, const char* suffix) {
  size_t n = std::strlen(suffix);
  return s.size() >= n && s.compare(s.size() - n, n, suffix) == 0;
}

std::vector<uint8_t> bytesOf(const bson_iter_t& it) {
  uint32_t len = 0;
  const uint8_t* data = nullptr;
  bson_iter_document(&it, &len, &data);
  return std::vector<uint8_t>(data, data + len);
}

bool addCollectionFromFile(RoutingTableBuilder& builder, bson_iter_t& coll_it, size_t index, std::string& error) {
  std::string where = "collections[" + std::to_string(index) + "]";
  bson_iter_t f;
  if (bson_iter_type(&coll_it) != BSON_TYPE_DOCUMENT || !bson_iter_recurse(&coll_it, &f)) {
    error = where + ": not an object";
    return false;
  }
  std::string ns;
  std::vector<uint8_t> key_bytes, collation_bytes;
  bool has_key = false, has_collation = false, unique = false, has_chunks = false;
  std::vector<RoutingTableBuilder::ChunkDoc> chunks;
  CollectionKind kind;
  while (bson_iter_next(&f)) {
    const char* name = bson_iter_key(&f);
    std::string kind_error;
    if (!readCollectionKind(name, f, kind, kind_error)) {
      error = where + (ns.empty() ? "" : " '" + ns + "'") + ": " + kind_error;
      return false;
    }
    if ((std::strcmp(name, "ns") == 0 || std::strcmp(name, "_id") == 0) && BSON_ITER_HOLDS_UTF8(&f)) {
      ns = bson_iter_utf8(&f, nullptr);
    } else if (std::strcmp(name, "key") == 0 && BSON_ITER_HOLDS_DOCUMENT(&f)) {
      key_bytes = bytesOf(f);
      has_key = true;
    } else if (std::strcmp(name, "unique") == 0) {
      unique = bson_iter_as_bool(&f);
    } else if (std::strcmp(name, "defaultCollation") == 0 && BSON_ITER_HOLDS_DOCUMENT(&f)) {
      collation_bytes = bytesOf(f);
      has_collation = true;
    } else if (std::strcmp(name, "chunks") == 0 && BSON_ITER_HOLDS_ARRAY(&f)) {
      has_chunks = true;
      bson_iter_t arr;
      bson_iter_recurse(&f, &arr);
      size_t ci = 0;
      while (bson_iter_next(&arr)) {
        bson_iter_t c;
        RoutingTableBuilder::ChunkDoc doc;
        bool has_min = false, has_max = false;
        if (BSON_ITER_HOLDS_DOCUMENT(&arr) && bson_iter_recurse(&arr, &c)) {
          while (bson_iter_next(&c)) {
            const char* cn = bson_iter_key(&c);
            if (std::strcmp(cn, "min") == 0 && BSON_ITER_HOLDS_DOCUMENT(&c)) {
              doc.min = bytesOf(c);
              has_min = true;
            } else if (std::strcmp(cn, "max") == 0 && BSON_ITER_HOLDS_DOCUMENT(&c)) {
              doc.max = bytesOf(c);
              has_max = true;
            } else if (std::strcmp(cn, "shard") == 0 && BSON_ITER_HOLDS_UTF8(&c)) {
              doc.shard = bson_iter_utf8(&c, nullptr);
            }
          }
        }
        if (!has_min || !has_max || doc.shard.empty()) {
          error = where + (ns.empty() ? "" : " '" + ns + "'") + ": chunk " + std::to_string(ci) +
                  " needs min and max objects and a shard name";
          return false;
        }
        chunks.push_back(std::move(doc));
        ++ci;
      }
    }
  }
  if (ns.empty()) {
    error = where + ": missing \"ns\"";
    return false;
  }
  if (!has_key) {
    error = "collection '" + ns + "': missing \"key\" (the shard key pattern)";
    return false;
  }
  if (!has_chunks) {
    error = "collection '" + ns + "': missing \"chunks\"";
    return false;
  }
  bson_t key, collation;
  bson_init_static(&key, key_bytes.data(), key_bytes.size());
  if (has_collation) bson_init_static(&collation, collation_bytes.data(), collation_bytes.size());
  return builder.addCollection(ns, key, unique, has_collation ? &collation : nullptr, std::move(chunks), error, kind);
}

std::shared_ptr<const RoutingTable> buildFromRoot(const bson_t& root, std::string& error) {
  RoutingTableBuilder builder;
  bson_iter_t it;
  if (bson_iter_init_find(&it, &root, "shards") && BSON_ITER_HOLDS_ARRAY(&it)) {
    bson_iter_t arr;
    bson_iter_recurse(&it, &arr);
    while (bson_iter_next(&arr)) {
      std::string name;
      if (BSON_ITER_HOLDS_UTF8(&arr)) {
        name = bson_iter_utf8(&arr, nullptr);
      } else if (BSON_ITER_HOLDS_DOCUMENT(&arr)) {
        bson_iter_t s;
        if (bson_iter_recurse(&arr, &s) && bson_iter_find(&s, "_id") && BSON_ITER_HOLDS_UTF8(&s))
          name = bson_iter_utf8(&s, nullptr);
      }
      if (!builder.declareShard(name, error)) {
        error = "shards: " + error;
        return nullptr;
      }
    }
    builder.setShardListDeclared(true);
  }
  if (!bson_iter_init_find(&it, &root, "collections") || !BSON_ITER_HOLDS_ARRAY(&it)) {
    error = "missing \"collections\" array";
    return nullptr;
  }
  bson_iter_t arr;
  bson_iter_recurse(&it, &arr);
  size_t i = 0;
  while (bson_iter_next(&arr)) {
    if (!addCollectionFromFile(builder, arr, i++, error)) return nullptr;
  }
  return builder.build();
}

}  // namespace

bool yamlToJson(const std::string& yaml, std::string& json, std::string& error) {
  try {
    YAML::Node root = YAML::Load(yaml);
    json.clear();
    emit(root, json, 0);
    return true;
  } catch (const YAML::Exception& e) {
    error = std::string("invalid YAML: ") + e.what();
    return false;
  }
}

std::shared_ptr<const RoutingTable> parseRoutingText(const std::string& text, bool yaml, const std::string& origin,
                                                     std::string& error) {
  std::string json;
  const std::string* source = &text;
  if (yaml) {
    if (!yamlToJson(text, json, error)) {
      error = origin + ": " + error;
      return nullptr;
    }
    source = &json;
  }
  bson_t root;
  std::string why;
  if (!common::parseShellJson(*source, &root, why)) {  // a hand-written file may use mongosh's syntax (MinKey)
    error = origin + ": invalid JSON: " + why;
    return nullptr;
  }
  auto table = buildFromRoot(root, error);
  bson_destroy(&root);
  if (!table) error = origin + ": " + error;
  return table;
}

std::shared_ptr<const RoutingTable> loadRoutingFile(const std::string& path, std::string& error) {
  std::string text;
  if (!readFile(path, text, error)) return nullptr;  // names the OS reason, as explain does
  bool yaml = endsWith(path, ".yaml") || endsWith(path, ".yml");
  if (!yaml) {
    size_t first = text.find_first_not_of(" \t\r\n");
    yaml = first != std::string::npos && text[first] != '{';
  }
  return parseRoutingText(text, yaml, path, error);
}

}  // namespace shardscope::routing
