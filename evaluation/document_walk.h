// The fields of a document that evaluation observes, in the order it observes them: the top-level
// fields first (at most max_top_level), then the fields of sub-documents breadth first
// as dotted paths (kMaxNestedElements in all, kMaxNestedDepth levels, paths of at most
// kMaxFieldNameBytes). One definition shared by the evaluation worker (NamespaceState::applyInsert)
// and the observer's digest of a large document (document_digest.h), so both see the same fields.
#pragma once
#include <bson/bson.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>
#include <vector>

#include "evaluation/field_limits.h"

namespace shardscope::evaluation {

// A digested (large) document's top-level fields past this many are not observed, so that its digest
// stays small whatever the document; a document evaluated whole has every top-level field observed
// (work linear in its size), so a key field placed after many others is still seen.
inline constexpr size_t kMaxObservedTopLevelFields = 1000;
inline constexpr size_t kEveryTopLevelField = SIZE_MAX;

// bson_iter_next for the types documents mostly hold (numbers, dates, ObjectIds, strings), read in
// place: the iterator is left as libbson leaves it (the same offsets after the same checks). Any
// other type, or an element failing a check, goes to bson_iter_next from the unchanged iterator.
// The library calls cost ~140 instructions per element (issue 29). `key`: the element's key.
[[gnu::always_inline]] inline bool nextField(bson_iter_t& it, std::string_view& key) {
  auto library = [&] {
    if (!bson_iter_next(&it)) return false;
    key = {bson_iter_key(&it), bson_iter_key_len(&it)};
    return true;
  };
  const uint8_t* d = it.raw;
  const uint32_t len = it.len, off = it.next_off;
  if (!d || off >= len) return library();
  const void* nul = std::memchr(d + off + 1, 0, len - off - 1);  // the key's end
  if (!nul) return library();
  const uint32_t o = static_cast<uint32_t>(static_cast<const uint8_t*>(nul) - d);
  const uint32_t value = o + 1;
  uint32_t next = 0, str = 0;
  switch (d[off]) {
    case BSON_TYPE_DATE_TIME: case BSON_TYPE_DOUBLE: case BSON_TYPE_INT64: case BSON_TYPE_TIMESTAMP: next = value + 8; break;
    case BSON_TYPE_INT32: next = value + 4; break;
    case BSON_TYPE_OID: next = value + 12; break;
    case BSON_TYPE_UTF8: {  // the length counts the NUL, and the NUL is there
      if (value + 4 >= len) return library();
      uint32_t n;
      std::memcpy(&n, d + value, 4);
      n = BSON_UINT32_FROM_LE(n);
      if (n == 0 || n > len - (value + 4) || d[value + 4 + n - 1] != 0) return library();
      str = value + 4;
      next = str + n;
      break;
    }
    default: return library();
  }
  if (next >= len) return library();
  it.off = it.type = off;
  it.key = off + 1;
  it.d1 = value;
  it.d2 = str;
  it.d3 = it.d4 = 0;
  it.next_off = next;
  it.err_off = 0;
  key = {reinterpret_cast<const char*>(d) + off + 1, o - off - 1};
  return true;
}

// bson_iter_value for the types documents mostly hold, read from the iterator's element (already
// checked by bson_iter_next) without the library call; false for the others.
inline bool iterValue(const bson_iter_t& it, bson_value_t& out) {
  const uint8_t* v = it.raw + it.d1;  // each case reads only as many bytes as its type holds
  auto u32 = [&] {
    uint32_t x;
    std::memcpy(&x, v, 4);
    return BSON_UINT32_FROM_LE(x);
  };
  auto u64 = [&] {
    uint64_t x;
    std::memcpy(&x, v, 8);
    return BSON_UINT64_FROM_LE(x);
  };
  out.value_type = static_cast<bson_type_t>(it.raw[it.type]);
  switch (out.value_type) {
    case BSON_TYPE_UTF8:  // bson_iter_utf8: the length without its NUL
      out.value.v_utf8.str = const_cast<char*>(reinterpret_cast<const char*>(it.raw + it.d2));
      out.value.v_utf8.len = static_cast<uint32_t>(std::max(0, static_cast<int32_t>(u32()) - 1));
      return true;
    case BSON_TYPE_DATE_TIME: out.value.v_datetime = static_cast<int64_t>(u64()); return true;
    case BSON_TYPE_INT64: out.value.v_int64 = static_cast<int64_t>(u64()); return true;
    case BSON_TYPE_INT32: out.value.v_int32 = static_cast<int32_t>(u32()); return true;
    case BSON_TYPE_DOUBLE: {
      const uint64_t bits = u64();
      std::memcpy(&out.value.v_double, &bits, 8);
      return true;
    }
    case BSON_TYPE_OID: std::memcpy(out.value.v_oid.bytes, v, 12); return true;
    case BSON_TYPE_BOOL: out.value.v_bool = *v != 0; return true;
    default: return false;
  }
}

// The element's value: iterValue's, or the library's (into the iterator) for the other types.
inline const bson_value_t& elementValue(const bson_iter_t& it, bson_value_t& scratch) {
  return iterValue(it, scratch) ? scratch : *bson_iter_value(const_cast<bson_iter_t*>(&it));
}

// BSON_ITER_HOLDS_DOCUMENT without the library call (after a successful next).
inline bool holdsDocument(const bson_iter_t& it) { return bson_iter_type_unsafe(&it) == BSON_TYPE_DOCUMENT; }

class DocumentWalk {
 public:
  // visit(path, iterator at the field, position): position counts the visits, a hint for lookups.
  // A top-level name longer than kMaxFieldNameBytes is visited too (it is never tracked).
  template <typename Visit>
  void run(const bson_t& doc, size_t max_top_level, Visit&& visit) {
    nested_.clear();
    prefixes_.clear();
    size_t position = 0;
    bson_iter_t it;
    if (bson_iter_init(&it, &doc)) {
      std::string_view key;
      for (; position < max_top_level && nextField(it, key); ++position) {
        visit(key, it, position);
        if (holdsDocument(it) && key.size() < kMaxFieldNameBytes) {
          Nested& n = nested_.emplace_back();
          if (!bson_iter_recurse(&it, &n.it)) {
            nested_.pop_back();
            continue;
          }
          n.prefix_offset = static_cast<uint32_t>(prefixes_.size());
          n.prefix_size = static_cast<uint32_t>(key.size());
          n.depth = 1;
          prefixes_.append(key);
        }
      }
    }
    uint32_t looked = 0;
    std::string_view key;
    for (size_t q = 0; q < nested_.size() && looked < kMaxNestedElements; ++q) {
      Nested n = nested_[q];
      while (looked < kMaxNestedElements && nextField(n.it, key)) {
        ++looked;
        path_.assign(prefixes_, n.prefix_offset, n.prefix_size);
        path_.push_back('.');
        path_.append(key);
        if (path_.size() > kMaxFieldNameBytes) continue;
        visit(std::string_view(path_), n.it, position++);
        if (holdsDocument(n.it) && n.depth < kMaxNestedDepth) {
          Nested child;
          if (!bson_iter_recurse(&n.it, &child.it)) continue;
          child.prefix_offset = static_cast<uint32_t>(prefixes_.size());
          child.prefix_size = static_cast<uint32_t>(path_.size());
          child.depth = n.depth + 1;
          prefixes_.append(path_);
          nested_.push_back(child);
        }
      }
    }
  }

  // The heap bytes of its scratch, with malloc's headers (as NamespaceState::memoryBytes counts).
  size_t heapBytes() const {
    auto text = [](const std::string& s) { return s.capacity() > 15 ? s.capacity() + 1 + 16 : 0; };
    return (nested_.capacity() ? nested_.capacity() * sizeof(Nested) + 16 : 0) + text(prefixes_) + text(path_);
  }

 private:
  struct Nested {
    bson_iter_t it;  // recursed into the sub-document
    uint32_t prefix_offset = 0, prefix_size = 0, depth = 0;
  };
  std::vector<Nested> nested_;  // scratch kept between documents: a walk allocates nothing once warm
  std::string prefixes_, path_;
};

}  // namespace shardscope::evaluation
