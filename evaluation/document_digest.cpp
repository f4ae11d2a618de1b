#include "evaluation/document_digest.h"

#include <algorithm>
#include <cstring>

#include "evaluation/digest_encoding.h"
#include "evaluation/projection.h"
#include "evaluation/value_codec.h"

namespace shardscope::evaluation {

namespace {

using namespace digest_encoding;

uint32_t get32(const char* p) {
  uint32_t v;
  std::memcpy(&v, p, 4);
  return BSON_UINT32_FROM_LE(v);
}

uint64_t get64(const char* p) {
  uint64_t v;
  std::memcpy(&v, p, 8);
  return BSON_UINT64_FROM_LE(v);
}

}  // namespace

// A value cut to about kMaxDigestValueBytes, of the same type.
void DocumentDigester::appendValue(std::string_view path, const bson_iter_t& it) {
  const bson_type_t type = bson_iter_type_unsafe(&it);
  const size_t value_bytes = it.next_off - it.d1;
  fields_.push_back(static_cast<char>(type));
  fields_.append(path.substr(0, kMaxFieldNameBytes + 1));  // a longer name is never tracked either way
  fields_.push_back('\0');
  if (value_bytes <= kMaxDigestValueBytes) {
    fields_.append(reinterpret_cast<const char*>(it.raw + it.d1), value_bytes);
    return;
  }
  constexpr size_t kPrefix = kMaxDigestValueBytes - 8;
  uint32_t len = 0;
  switch (type) {
    case BSON_TYPE_UTF8: {
      const char* s = bson_iter_utf8(&it, &len);
      return putStringPrefix(fields_, s, len, kPrefix);
    }
    case BSON_TYPE_CODE: {
      const char* s = bson_iter_code(&it, &len);
      return putStringPrefix(fields_, s, len, kPrefix);
    }
    case BSON_TYPE_SYMBOL: {
      const char* s = bson_iter_symbol(&it, &len);
      return putStringPrefix(fields_, s, len, kPrefix);
    }
    case BSON_TYPE_CODEWSCOPE: {  // the code's prefix, an empty scope
      uint32_t scope_len = 0;
      const uint8_t* scope = nullptr;
      const char* s = bson_iter_codewscope(&it, &len, &scope_len, &scope);
      const size_t n = utf8Prefix(s, len, kPrefix);
      put32(fields_, static_cast<uint32_t>(4 + 4 + n + 1 + 5));
      putStringPrefix(fields_, s, len, kPrefix);
      fields_.append("\x05\x00\x00\x00\x00", 5);
      return;
    }
    case BSON_TYPE_BINARY: {
      bson_subtype_t subtype;
      const uint8_t* data = nullptr;
      bson_iter_binary(&it, &subtype, &len, &data);
      const uint32_t n = std::min<uint32_t>(len, kPrefix);
      put32(fields_, subtype == BSON_SUBTYPE_BINARY_DEPRECATED ? n + 4 : n);
      fields_.push_back(static_cast<char>(subtype));
      if (subtype == BSON_SUBTYPE_BINARY_DEPRECATED) put32(fields_, n);
      fields_.append(reinterpret_cast<const char*>(data), n);
      return;
    }
    case BSON_TYPE_REGEX: {
      const char* options = nullptr;
      const char* pattern = bson_iter_regex(&it, &options);
      fields_.append(pattern, utf8Prefix(pattern, std::strlen(pattern), kPrefix));
      fields_.push_back('\0');
      fields_.append(options, std::min<size_t>(std::strlen(options), 8));
      fields_.push_back('\0');
      return;
    }
    case BSON_TYPE_DBPOINTER: {
      const char* collection = nullptr;
      const bson_oid_t* oid = nullptr;
      bson_iter_dbpointer(&it, &len, &collection, &oid);
      putStringPrefix(fields_, collection, len, kPrefix);
      fields_.append(reinterpret_cast<const char*>(oid->bytes), 12);
      return;
    }
    case BSON_TYPE_DOCUMENT: {  // its first fields while they fit (its nested paths are listed apart)
      const size_t at = fields_.size();
      put32(fields_, 0);
      bson_iter_t child;
      if (bson_iter_recurse(&it, &child)) {
        while (bson_iter_next(&child) && fields_.size() - at + (child.next_off - child.off) + 1 <= kPrefix)
          fields_.append(reinterpret_cast<const char*>(child.raw + child.off), child.next_off - child.off);
      }
      fields_.push_back('\0');
      const uint32_t size = BSON_UINT32_TO_LE(static_cast<uint32_t>(fields_.size() - at));
      std::memcpy(fields_.data() + at, &size, 4);
      return;
    }
    default:  // arrays (only their type is read) and anything else: empty, of the same type
      fields_.append("\x05\x00\x00\x00\x00", 5);
      return;
  }
}

std::string_view DocumentDigester::digest(const bson_t& doc) {
  fields_.assign(4, '\0');
  notes_.clear();
  count_ = 0;
  const size_t topLevel = doc.len <= kEveryFieldUpToBytes ? kEveryTopLevelField : kMaxObservedTopLevelFields;
  walk_.run(doc, topLevel, [&](std::string_view path, const bson_iter_t& it, size_t) {
    const bool whole = it.next_off - it.d1 <= kMaxDigestValueBytes;
    // Arrays are never hashed (a shard key cannot hold one): only their type is read.
    bson_value_t scratch;
    const uint64_t hash = bson_iter_type_unsafe(&it) == BSON_TYPE_ARRAY ? 0 : valueHash(elementValue(it, scratch));
    appendValue(path, it);
    put64(notes_, hash);
    notes_.push_back(whole ? 1 : 0);
    ++count_;
  });
  fields_.push_back('\0');
  const uint32_t size = BSON_UINT32_TO_LE(static_cast<uint32_t>(fields_.size()));
  std::memcpy(fields_.data(), &size, 4);
  projectSmallFields(doc, projection_);

  out_.clear();
  put64(out_, doc.len);
  put32(out_, static_cast<uint32_t>(fields_.size()));
  out_.append(fields_);
  put32(out_, static_cast<uint32_t>(projection_.size()));
  out_.append(projection_);
  put32(out_, count_);
  out_.append(notes_);
  // A thread's scratch does not keep the largest digest it ever made.
  for (std::string* s : {&fields_, &notes_, &out_})
    if (s->capacity() > 64 * 1024) s->shrink_to_fit();
  return out_;
}

uint64_t DigestView::hash(uint32_t i) const { return get64(notes.data() + size_t{i} * kNoteBytes); }
bool DigestView::whole(uint32_t i) const { return notes[size_t{i} * kNoteBytes + 8] != 0; }

bool readDigest(std::string_view d, DigestView& out) {
  auto take = [&](size_t n) {
    if (d.size() < n) return std::string_view();
    std::string_view r = d.substr(0, n);
    d.remove_prefix(n);
    return r;
  };
  std::string_view size = take(8), fields_len = take(4);
  if (size.empty() || fields_len.empty()) return false;
  out.size = get64(size.data());
  std::string_view fields = take(get32(fields_len.data()));
  if (fields.empty() || !bson_init_static(&out.fields, reinterpret_cast<const uint8_t*>(fields.data()), fields.size()))
    return false;
  std::string_view projection_len = take(4);
  if (projection_len.empty()) return false;
  out.projection = take(get32(projection_len.data()));
  std::string_view count = take(4);
  if (count.empty()) return false;
  out.count = get32(count.data());
  if (d.size() != size_t{out.count} * kNoteBytes) return false;
  out.notes = d;
  return true;
}

}  // namespace shardscope::evaluation
