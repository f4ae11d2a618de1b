// A document's top-level fields by name, found in one walk over its bytes: what a series of
// bson_iter_init_find calls would find (the first element of each name), for a fraction of the
// cost. libbson's bson_iter_next costs ~100 instructions per element (a byte loop per key, its
// checks through function calls), and the observer looked up 3-6 names per request, each a walk;
// the worker's projection of inserted documents walks them the same way.
// Each element is framed by protocol::readElement (protocol/bson_elements.h), exactly as
// bson_iter_next checks it, so the walk stops where libbson's would; the rare types (regex, DBPointer, code with scope, binary subtype 2) are left to libbson.
#pragma once
#include <bson/bson.h>

#include <algorithm>
#include <array>
#include <bit>
#include <cstdint>
#include <cstring>
#include <string_view>

#include "protocol/bson_elements.h"
#include "protocol/delete_limit.h"

namespace shardscope::evaluation {

struct RawElement {
  uint8_t type = 0;     // 0: not found
  uint32_t offset = 0;  // of its type byte, in the document
  uint32_t key_len = 0;
  uint32_t value = 0;   // where its value starts
  uint32_t end = 0;     // past its value: the next element

  bool found() const { return type != 0; }
};

namespace raw_detail {

enum class Step : uint8_t { Element, End, Rare };

// The element at `off`: its value's start and the next element's offset, framed by
// protocol::readElement (bson_iter_next's checks: End where it would return false, the document's
// end or a malformed element). The rare types (regex, DBPointer, code with scope, binary subtype 2)
// are left to libbson: Rare.
[[gnu::always_inline]] inline Step next(const uint8_t* data, uint32_t len, uint32_t off, RawElement& e, uint32_t& next_off) {
  if (len < 5 || off >= len - 1) return Step::End;
  protocol::BsonElement el;
  uint32_t pos = off;
  if (!protocol::readElement(data, len - 1, pos, el)) return Step::End;
  switch (el.type) {
    case BSON_TYPE_REGEX: case BSON_TYPE_DBPOINTER: case BSON_TYPE_CODEWSCOPE: return Step::Rare;
    case BSON_TYPE_BINARY:
      if (el.value[4] == BSON_SUBTYPE_BINARY_DEPRECATED) return Step::Rare;
      break;
    default: break;
  }
  e.type = el.type;
  e.offset = off;
  e.key_len = static_cast<uint32_t>(el.key.size());
  e.value = static_cast<uint32_t>(el.value - data);
  e.end = next_off = pos;
  return Step::Element;
}

inline uint32_t load32(const uint8_t* p) { return protocol::loadUint32(p); }

}  // namespace raw_detail

// Calls f(element) for each element of the document at `data` while f returns true, as
// bson_iter_next visits them: `len` is the document's length (for a sub-document, the one its
// checked element holds, so that many bytes are readable). False when a rare type stopped the
// walk: the caller then asks libbson.
template <typename F>
[[gnu::always_inline]] inline bool forEachElement(const uint8_t* data, uint32_t len, F&& f) {
  RawElement e;
  for (uint32_t off = 4, next_off = 0; len >= 5; off = next_off) {
    const raw_detail::Step step = raw_detail::next(data, len, off, e, next_off);
    if (step == raw_detail::Step::End) return true;
    if (step == raw_detail::Step::Rare) return false;
    if (!f(e)) return true;
  }
  return true;
}

// found[i]: the first element of `doc` named names[i], as bson_iter_init_find(doc, names[i]) finds.
template <size_t N>
[[gnu::always_inline]] inline void findFields(const bson_t& doc, const std::array<std::string_view, N>& names,
                                              std::array<RawElement, N>& found) {
  static_assert(N <= 32);
  found = {};
  const uint8_t* data = bson_get_data(&doc);
  const uint32_t len = doc.len;
  if (len < 5) return;
  // The names' lengths as bits (63: 63 or more), so that most keys are passed over at one test;
  // their sizes and first bytes in locals, and `todo` for the names still missing, so the loop
  // keeps them in registers (a store into `found` may alias any byte it would otherwise reload).
  auto bit = [](size_t n) { return uint64_t{1} << std::min<size_t>(n, 63); };
  uint64_t lengths = 0;
  std::array<uint32_t, N> sizes;
  std::array<uint8_t, N> firsts;
  for (size_t i = 0; i < N; ++i) {
    lengths |= bit(names[i].size());
    sizes[i] = static_cast<uint32_t>(names[i].size());
    firsts[i] = names[i].empty() ? 0 : static_cast<uint8_t>(names[i][0]);
  }
  uint32_t todo = static_cast<uint32_t>((uint64_t{1} << N) - 1);
  RawElement e;
  for (uint32_t off = 4, next_off = 0; todo != 0; off = next_off) {
    const raw_detail::Step step = raw_detail::next(data, len, off, e, next_off);
    if (step == raw_detail::Step::End) return;
    if (step == raw_detail::Step::Rare) break;
    if (!(lengths & bit(e.key_len))) continue;
    const uint8_t* key = data + off + 1;  // NUL-terminated: key[0] is 0 for an empty key
#pragma GCC unroll 32
    for (size_t i = 0; i < N; ++i) {
      if ((todo >> i & 1) && e.key_len == sizes[i] && key[0] == firsts[i] &&
          (sizes[i] <= 1 || std::memcmp(key + 1, names[i].data() + 1, sizes[i] - 1) == 0)) {
        found[i] = e;
        todo &= ~(uint32_t{1} << i);
      }
    }
  }
  if (todo == 0) return;
  // A rare type on the way: libbson finds the rest (from the start, so what it finds lies past
  // the rare element, as each name was not found before it).
  for (size_t i = 0; i < N; ++i) {
    bson_iter_t it;
    if (found[i].found() || names[i].find('\0') != std::string_view::npos ||
        !bson_iter_init_find_w_len(&it, &doc, names[i].data(), static_cast<int>(names[i].size())))
      continue;
    found[i] = {static_cast<uint8_t>(bson_iter_type(&it)), it.off, bson_iter_key_len(&it), it.d1, it.next_off};
  }
}

// The bytes of the document or array `e` holds, as bson_iter_recurse takes them: its length as
// written, unchecked (a walk over them stops where bson_iter_next would). `base`: the bytes of the
// document `e` is an element of (which holds those `len` bytes: the element was checked).
inline bool subBytes(const uint8_t* base, const RawElement& e, const uint8_t*& data, uint32_t& len) {
  if (e.type != BSON_TYPE_DOCUMENT && e.type != BSON_TYPE_ARRAY) return false;
  data = base + e.value;
  len = raw_detail::load32(data);
  return true;
}

// A static view of the document (type document) `e` holds, as common::documentAt makes it.
inline bool documentAt(const bson_t& doc, const RawElement& e, bson_t& out) {
  if (e.type != BSON_TYPE_DOCUMENT) return false;
  const uint8_t* v = bson_get_data(&doc) + e.value;
  return bson_init_static(&out, v, raw_detail::load32(v));
}

// A libbson iterator at `e` (for readers that take one).
inline bool iteratorAt(const bson_t& doc, const RawElement& e, bson_iter_t& out) {
  return e.found() && bson_iter_init_from_data_at_offset(&out, bson_get_data(&doc), doc.len, e.offset, e.key_len);
}

// bson_iter_recurse into the array `e` holds.
inline bool arrayAt(const bson_t& doc, const RawElement& e, bson_iter_t& out) {
  bson_iter_t it;
  return e.type == BSON_TYPE_ARRAY && iteratorAt(doc, e, it) && bson_iter_recurse(&it, &out);
}

// bson_iter_as_bool of `e`, or `fallback` when it is absent (common::boolField).
inline bool asBool(const bson_t& doc, const RawElement& e, bool fallback) {
  return e.type == 0 ? fallback : protocol::asBool(e.type, bson_get_data(&doc) + e.value);
}

// A delete statement's limit element `e` as the server reads it (protocol/delete_limit.h).
inline protocol::DeleteLimit deleteLimit(const bson_t& doc, const RawElement& e) {
  return protocol::readDeleteLimit(e.type != 0, e.type, bson_get_data(&doc) + e.value);
}

}  // namespace shardscope::evaluation
