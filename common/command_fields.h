// Small readers over a command body shared by the per-command targeting code: sub-documents,
// statements that come inline (body array) or as an OP_MSG document sequence, namespaces.
#pragma once
#include <bson/bson.h>

#include <cstring>
#include <string>
#include <string_view>

#include "protocol/bson_elements.h"
#include "protocol/command_view.h"

namespace shardscope::common {

// A static view of body[key] when it is a document: the first element named `key`, as
// bson_iter_init_find finds it, read with BsonElements (a few instructions per element passed).
inline bool subDocument(const bson_t& body, const char* key, bson_t& out) {
  const std::string_view name(key);
  protocol::BsonElements elements(bson_get_data(&body), body.len);
  protocol::BsonElement e;
  while (elements.next(e))
    if (e.key == name) return e.type == BSON_TYPE_DOCUMENT && bson_init_static(&out, e.value, e.value_len);
  return false;
}

// The element bson_iter_init_find(&it, &cmd.body, key) finds, looked up in the view's key index
// when it has one (protocol/command_view.h): the index lists, in order, the elements bson_iter_next
// visits, so a key it lacks is not in the body, and the body is not walked again. Inserts and
// updates look for an inline statement array that is almost always a document sequence instead.
inline bool findBodyField(const protocol::CommandView& cmd, const char* key, bson_iter_t& it) {
  if (!cmd.bodyScanned || cmd.indexedKeys == protocol::CommandView::kNotIndexed)
    return bson_iter_init_find(&it, &cmd.body, key);
  const std::string_view name(key);
  const uint8_t* data = bson_get_data(&cmd.body);
  for (uint8_t i = 0; i < cmd.indexedKeys; ++i) {
    if (cmd.keyLengths[i] != name.size() || std::memcmp(data + cmd.keyOffsets[i] + 1, name.data(), name.size()) != 0)
      continue;
    if (bson_iter_init_from_data_at_offset(&it, data, cmd.body.len, cmd.keyOffsets[i], cmd.keyLengths[i])) return true;
    return bson_iter_init_find(&it, &cmd.body, key);  // not the view's body after all: search it
  }
  return false;
}

// subDocument(cmd.body, key, out) through the view's key index when it has one: the element is
// read where the index says, with the framing rules the walk applies (the elements before it
// passed bson_iter_next's, the same rules); the body is not walked again.
inline bool subDocument(const protocol::CommandView& cmd, const char* key, bson_t& out) {
  if (!cmd.bodyScanned || cmd.indexedKeys == protocol::CommandView::kNotIndexed) return subDocument(cmd.body, key, out);
  const std::string_view name(key);
  const uint8_t* data = bson_get_data(&cmd.body);
  for (uint8_t i = 0; i < cmd.indexedKeys; ++i) {
    if (cmd.keyLengths[i] != name.size() || std::memcmp(data + cmd.keyOffsets[i] + 1, name.data(), name.size()) != 0)
      continue;
    // The element's key is known: only a document's framing is left to check, as readElement does
    // (the key ends before the terminator, the length prefix fits, the length stays inside).
    const uint32_t at = cmd.keyOffsets[i], limit = cmd.body.len - 1;
    const uint32_t value = at + cmd.keyLengths[i] + 2;  // after the type byte, the key and its NUL
    if (value > limit || data[value - 1] != 0) return subDocument(cmd.body, key, out);  // not the view's body
    if (data[at] != BSON_TYPE_DOCUMENT || limit - value < 4) return false;
    const uint32_t len = protocol::loadUint32(data + value);
    return len <= limit - value && bson_init_static(&out, data + value, len);
  }
  return false;
}

// A static view of the document an iterator points at.
inline bool documentAt(const bson_iter_t& it, bson_t& out) {
  if (!BSON_ITER_HOLDS_DOCUMENT(&it)) return false;
  uint32_t len = 0;
  const uint8_t* data = nullptr;
  bson_iter_document(&it, &len, &data);
  return bson_init_static(&out, data, len);
}

// A document whose first key is an operator ({$gte: ...}): a query condition, not a value.
inline bool isOperatorDocument(const bson_iter_t& it) {
  if (!BSON_ITER_HOLDS_DOCUMENT(&it)) return false;
  bson_iter_t sub;
  return bson_iter_recurse(&it, &sub) && bson_iter_next(&sub) && bson_iter_key(&sub)[0] == '$';
}

// A static view of the document or array an iterator points at.
inline bool documentOrArray(const bson_iter_t& it, bson_t& out) {
  uint32_t len = 0;
  const uint8_t* data = nullptr;
  if (BSON_ITER_HOLDS_DOCUMENT(&it)) bson_iter_document(&it, &len, &data);
  else if (BSON_ITER_HOLDS_ARRAY(&it)) bson_iter_array(&it, &len, &data);
  else return false;
  return bson_init_static(&out, data, len);
}

// The whole string an iterator points at ("" when it holds no string). A BSON string may hold a
// NUL: bson_iter_utf8(&it, nullptr) read as a C string stops there, so "db\0x.c" would be read
// as, and counted with, "db" (a name a client chose must never be cut so).
inline std::string_view utf8Value(const bson_iter_t& it) {
  if (!BSON_ITER_HOLDS_UTF8(&it)) return {};
  uint32_t len = 0;
  const char* s = bson_iter_utf8(&it, &len);
  return {s, len};
}

// The bytes of the binary an iterator points at ("" when it holds no binary).
inline std::string binaryBytes(const bson_iter_t& it) {
  if (!BSON_ITER_HOLDS_BINARY(&it)) return {};
  bson_subtype_t subtype;
  uint32_t len = 0;
  const uint8_t* data = nullptr;
  bson_iter_binary(&it, &subtype, &len, &data);
  return std::string(reinterpret_cast<const char*>(data), len);
}

inline bool boolField(const bson_t& doc, const char* key, bool fallback) {
  bson_iter_t it;
  if (!bson_iter_init_find(&it, &doc, key)) return fallback;
  return bson_iter_as_bool(&it);
}

inline int64_t intField(const bson_t& doc, const char* key, int64_t fallback) {
  bson_iter_t it;
  if (!bson_iter_init_find(&it, &doc, key) || !BSON_ITER_HOLDS_NUMBER(&it)) return fallback;
  return bson_iter_as_int64(&it);
}

// Calls f(const bson_t&) for each document of body[field] (an array) and of the document sequence
// named `field`. Returns false when either is malformed (a non-document element, bad bytes).
template <typename F>
bool forEachStatement(const protocol::CommandView& cmd, const char* field, F&& f) {
  bson_iter_t it;
  if (findBodyField(cmd, field, it)) {
    if (!BSON_ITER_HOLDS_ARRAY(&it)) return false;
    bson_iter_t arr;
    if (!bson_iter_recurse(&it, &arr)) return false;
    while (bson_iter_next(&arr)) {
      bson_t doc;
      uint32_t len = 0;
      const uint8_t* data = nullptr;
      if (!BSON_ITER_HOLDS_DOCUMENT(&arr)) return false;
      bson_iter_document(&arr, &len, &data);
      if (!bson_init_static(&doc, data, len)) return false;
      if (!f(doc)) return true;
    }
  }
  for (const auto& seq : cmd.sequences) {
    if (seq.identifier != field) continue;
    // By hand rather than forEachDocument: a caller that stops (its budget ran out) must not pay
    // for walking the other 9 million documents of a 48 MB sequence.
    const auto docs = seq.documents;
    size_t at = 0;
    while (at < docs.size()) {
      if (docs.size() - at < 5) return false;
      int32_t len = protocol::loadInt32(docs.data() + at);
      bson_t doc;
      if (len < 5 || static_cast<size_t>(len) > docs.size() - at ||
          !bson_init_static(&doc, docs.data() + at, static_cast<size_t>(len)))
        return false;
      if (!f(doc)) return true;
      at += static_cast<size_t>(len);
    }
  }
  return true;
}

// "db.coll" in `buffer` without allocating for ordinary lengths.
inline std::string_view joinNamespace(std::string_view db, std::string_view coll, std::string& buffer) {
  buffer.clear();
  buffer.reserve(db.size() + coll.size() + 1);
  buffer.append(db).append(1, '.').append(coll);
  return buffer;
}

}  // namespace shardscope::common
