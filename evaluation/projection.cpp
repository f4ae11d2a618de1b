#include "evaluation/projection.h"

#include <algorithm>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <cstring>

namespace shardscope::evaluation {

namespace {

constexpr uint32_t kMaxProjectedValueBytes = 512;
constexpr uint32_t kMaxProjectedFields = 48;
constexpr uint32_t kMaxProjectedKeyBytes = 128;    // as evaluation tracks fields (kMaxFieldNameBytes)
constexpr uint32_t kMaxProjectedDocBytes = 2048;  // a sample's bound in bytes, whatever the fields

// Whether the element at `it` joins a projection of `size` bytes so far.
bool keeps(const bson_iter_t& it, size_t size) {
  return it.next_off - it.d1 <= kMaxProjectedValueBytes && bson_iter_key_len(&it) <= kMaxProjectedKeyBytes &&
         size + (it.next_off - it.off) + 1 <= kMaxProjectedDocBytes;
}

// The slow path, and the definition of the result: each kept field appended with bson_append_iter.
void projectWithLibbson(const bson_t& doc, std::string& out) {
  bson_t proj = BSON_INITIALIZER;
  bson_iter_t it;
  uint32_t n = 0;
  if (bson_iter_init(&it, &doc)) {
    while (bson_iter_next(&it) && n < kMaxProjectedFields) {
      if (!keeps(it, proj.len - 1)) continue;  // the size the fast path counts: without the terminator
      bson_append_iter(&proj, bson_iter_key(&it), -1, &it);
      ++n;
    }
  }
  out.assign(reinterpret_cast<const char*>(bson_get_data(&proj)), proj.len);
  bson_destroy(&proj);
}

// Elements that bson_append_iter writes back byte for byte (a valid iterator guarantees well-formed
// values). Not these: regexes (libbson sorts their options), code (re-measured with strlen), the
// deprecated binary subtype and the other rare types take the slow path.
bool copiedVerbatim(const bson_iter_t& it) {
  switch (bson_iter_type(&it)) {
    case BSON_TYPE_DOUBLE:
    case BSON_TYPE_UTF8:
    case BSON_TYPE_OID:
    case BSON_TYPE_BOOL:
    case BSON_TYPE_DATE_TIME:
    case BSON_TYPE_NULL:
    case BSON_TYPE_INT32:
    case BSON_TYPE_TIMESTAMP:
    case BSON_TYPE_INT64:
    case BSON_TYPE_DECIMAL128:
    case BSON_TYPE_MINKEY:
    case BSON_TYPE_MAXKEY:
    case BSON_TYPE_UNDEFINED: return true;
    case BSON_TYPE_DOCUMENT:
    case BSON_TYPE_ARRAY: {  // libbson appends nothing for one that does not open as a document
      uint32_t len = 0;
      const uint8_t* data = nullptr;
      if (BSON_ITER_HOLDS_DOCUMENT(&it))
        bson_iter_document(&it, &len, &data);
      else
        bson_iter_array(&it, &len, &data);
      bson_t sub;
      return bson_init_static(&sub, data, len);
    }
    case BSON_TYPE_BINARY: {
      bson_subtype_t subtype;
      uint32_t len = 0;
      const uint8_t* data = nullptr;
      bson_iter_binary(&it, &subtype, &len, &data);
      return subtype != BSON_SUBTYPE_BINARY_DEPRECATED;
    }
    default: return false;
  }
}

}  // namespace

void projectSmallFields(const bson_t& doc, std::string& out) {
  // A power of two (up to 4 KiB): reused strings then settle at one capacity although documents
  // differ by a few bytes. The projection is never longer than the document.
  out.reserve(std::bit_ceil(std::min<size_t>(doc.len, kMaxProjectedDocBytes)));
  out.assign(4, '\0');  // the document's length, set at the end
  bson_iter_t it;
  uint32_t n = 0;
  if (bson_iter_init(&it, &doc)) {
    while (bson_iter_next(&it) && n < kMaxProjectedFields) {
      if (!keeps(it, out.size())) continue;
      if (!copiedVerbatim(it)) return projectWithLibbson(doc, out);
      out.append(reinterpret_cast<const char*>(it.raw) + it.off, it.next_off - it.off);  // type, key, value
      ++n;
    }
  }
  out.push_back('\0');
  uint32_t len = BSON_UINT32_TO_LE(static_cast<uint32_t>(out.size()));
  std::memcpy(out.data(), &len, 4);
}

}  // namespace shardscope::evaluation
