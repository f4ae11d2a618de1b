#include "rewrite/lookup_rule.h"

#include <charconv>
#include <optional>
#include <string_view>
#include <sstream>
#include <vector>

#include "routing/shard_key_pattern.h"

namespace shardscope::rewrite {
namespace {

std::string trim(const std::string& s) {
  auto b = s.find_first_not_of(" \t");
  auto e = s.find_last_not_of(" \t");
  return b == std::string::npos ? "" : s.substr(b, e - b + 1);
}

bool validField(const std::string& f) { return !f.empty() && f[0] != '$' && f.find(' ') == std::string::npos; }

}  // namespace

bool parseLookupRule(const std::string& spec, LookupRule& out, std::string& error) {
  out = {};
  auto colon = spec.find(':');
  auto arrow = spec.find("->");
  if (colon == std::string::npos || arrow == std::string::npos || arrow < colon) {
    error = "expected 'db.coll: lookupField -> addField[,addField] [file=PATH] [collection=DB.COLL] [capacity=N] [max_bytes=N]', got '" +
            spec + "'";
    return false;
  }
  out.ns = trim(spec.substr(0, colon));
  auto dot = out.ns.find('.');
  if (dot == std::string::npos || dot == 0 || dot + 1 == out.ns.size()) {
    error = "namespace must be db.collection, got '" + out.ns + "'";
    return false;
  }
  out.lookup_field = trim(spec.substr(colon + 1, arrow - colon - 1));
  if (!validField(out.lookup_field)) {
    error = "invalid lookup field '" + out.lookup_field + "'";
    return false;
  }
  std::string after = trim(spec.substr(arrow + 2));
  std::vector<std::string> adds;
  if (!after.empty() && after[0] == '{') {
    // The added fields written as a key, in the syntax of key candidates: {customerId: 1, orderDate: 1}.
    auto close = after.find('}');
    std::string keyError;
    auto key = close == std::string::npos ? std::nullopt
                                          : routing::ShardKeyPattern::fromJson(after.substr(0, close + 1), keyError);
    if (!key) {
      error = close == std::string::npos ? "the key after '->' is not closed with '}'" : keyError;
      return false;
    }
    for (const auto& f : key->fields()) adds.push_back(f.path);
    after = after.substr(close + 1);
  } else {
    auto end = after.find_first_of(" \t");
    std::stringstream fields(after.substr(0, end));
    for (std::string f; std::getline(fields, f, ',');) adds.push_back(f);
    after = end == std::string::npos ? "" : after.substr(end);
  }
  std::istringstream rest(after);
  for (const auto& f : adds) {
    if (!validField(f) || f == out.lookup_field) {
      error = "invalid field to add '" + f + "'";
      return false;
    }
    out.add_fields.push_back(f);
  }
  if (out.add_fields.empty()) {
    error = "no field to add after '->'";
    return false;
  }
  for (std::string option; rest >> option;) {
    auto eq = option.find('=');
    std::string key = option.substr(0, eq), value = eq == std::string::npos ? "" : option.substr(eq + 1);
    if (value.empty()) {
      error = "option '" + option + "' needs a value (file=, collection=, capacity=, max_bytes=, unique=)";
      return false;
    }
    if (key == "file") out.mapping_file = value;
    else if (key == "collection") {
      if (value.find('.') == std::string::npos) {
        error = "collection must be db.collection, got '" + value + "'";
        return false;
      }
      out.mapping_collection = value;
    } else if (key == "uri") {
      if (value.rfind("mongodb://", 0) != 0) {
        error = "uri must be a mongodb:// URI, got '" + value + "'";
        return false;
      }
      out.mapping_uri = value;
    } else if (key == "capacity") {
      auto [p, ec] = std::from_chars(value.data(), value.data() + value.size(), out.capacity);
      if (ec != std::errc() || p != value.data() + value.size() || out.capacity == 0) {
        error = "capacity must be a positive whole number, got '" + value + "'";
        return false;
      }
    } else if (key == "max_bytes") {
      // A whole number of bytes, or of KiB / MiB / GiB with a k, m or g suffix.
      uint64_t n = 0;
      auto [p, ec] = std::from_chars(value.data(), value.data() + value.size(), n);
      const std::string_view unit(p, value.data() + value.size() - p);
      const int shift = unit.empty() ? 0 : unit == "k" || unit == "K" ? 10 : unit == "m" || unit == "M" ? 20
                                         : unit == "g" || unit == "G" ? 30 : -1;
      if (ec != std::errc() || shift < 0 || n == 0 || n > (uint64_t{1} << (62 - shift))) {
        error = "max_bytes must be a positive whole number of bytes (or with k, m, g), got '" + value + "'";
        return false;
      }
      out.max_bytes = n << shift;
    } else if (key == "unique") {
      if (value != "true" && value != "false") {
        error = "unique must be true or false, got '" + value + "'";
        return false;
      }
      out.unique = value == "true";
    } else {
      error = "unknown option '" + key + "' (file, collection, uri, capacity, max_bytes, unique)";
      return false;
    }
  }
  return true;
}

}  // namespace shardscope::rewrite
