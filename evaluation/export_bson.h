// Reading and writing the fields of a sketch export (NamespaceState, KeyFacts): binary strings,
// arrays of numbers and strings, and lenient getters that read a missing or mistyped field as
// empty or 0 (the importer then judges what it got).
#pragma once

#include <bson/bson.h>

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "common/command_fields.h"

namespace shardscope::evaluation {

void appendBin(bson_t* doc, const char* key, std::string_view bytes);
void appendCounts(bson_t* doc, const char* key, const std::vector<double>& v);
// A name a client chose (namespace, field path, shape, label) as a BSON string: common::utf8Name's
// form, so bytes that are not UTF-8 neither break the export's JSON nor merge two names into one.
void appendName(bson_t* doc, const char* key, std::string_view name);
// Strings that are client names, each as appendName writes it.
void appendStrings(bson_t* doc, const char* key, const std::vector<std::string>& v);

int64_t getInt(const bson_t& doc, const char* key);
std::string getString(const bson_t& doc, const char* key);
std::string getBin(const bson_iter_t& it);
std::string getBin(const bson_t& doc, const char* key);
std::vector<double> getCounts(const bson_t& doc, const char* key);
// Strings and binaries of array doc[key], as strings.
std::vector<std::string> getStrings(const bson_t& doc, const char* key);

// Calls f(const bson_t&) for each sub-document of array doc[key].
template <typename F>
void forEachDoc(const bson_t& doc, const char* key, F&& f) {
  bson_iter_t it, arr;
  if (!bson_iter_init_find(&it, &doc, key) || !BSON_ITER_HOLDS_ARRAY(&it) || !bson_iter_recurse(&it, &arr)) return;
  while (bson_iter_next(&arr)) {
    bson_t sub;
    if (common::documentAt(arr, sub)) f(sub);
  }
}

}  // namespace shardscope::evaluation
