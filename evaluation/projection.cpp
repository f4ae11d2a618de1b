#include "evaluation/projection.h"

#include <algorithm>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <cstring>

#include "evaluation/raw_fields.h"

namespace shardscope::evaluation {

namespace {


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

// The fast path's elements: those copiedVerbatim accepts, read from the bytes (raw_fields.h leaves
// the deprecated binary subtype and the other rare types to libbson, here the slow path).
bool copiedVerbatim(const uint8_t* data, const RawElement& e) {
  switch (e.type) {
    case BSON_TYPE_DOUBLE: case BSON_TYPE_UTF8: case BSON_TYPE_OID: case BSON_TYPE_BOOL: case BSON_TYPE_DATE_TIME:
    case BSON_TYPE_NULL: case BSON_TYPE_INT32: case BSON_TYPE_TIMESTAMP: case BSON_TYPE_INT64:
    case BSON_TYPE_DECIMAL128: case BSON_TYPE_MINKEY: case BSON_TYPE_MAXKEY: case BSON_TYPE_UNDEFINED:
    case BSON_TYPE_BINARY: return true;
    case BSON_TYPE_DOCUMENT: case BSON_TYPE_ARRAY: {  // as bson_init_static accepts it
      uint32_t len;
      std::memcpy(&len, data + e.value, 4);
      len = BSON_UINT32_FROM_LE(len);
      return len >= 5 && len <= INT32_MAX && data[e.value + len - 1] == 0;
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
  // One walk over the bytes, each element checked as bson_iter_next checks it (raw_fields.h).
  const uint8_t* data = bson_get_data(&doc);
  uint32_t n = 0;
  bool verbatim = true;
  // Kept elements that follow each other are appended as one run (usually the whole document).
  size_t size = out.size();
  uint32_t run_from = 0, run_to = 0;
  auto appendRun = [&] { out.append(reinterpret_cast<const char*>(data) + run_from, run_to - run_from); };
  const bool walked = forEachElement(data, doc.len, [&](const RawElement& e) {
    if (n >= kMaxProjectedFields) return false;
    const uint32_t element = e.end - e.offset;  // type, key, value
    if (e.end - e.value > kMaxProjectedValueBytes || e.key_len > kMaxProjectedKeyBytes ||
        size + element + 1 > kMaxProjectedDocBytes)
      return true;  // not kept (keeps())
    if (!(verbatim = copiedVerbatim(data, e))) return false;
    if (e.offset != run_to) {
      appendRun();
      run_from = e.offset;
    }
    run_to = e.end;
    size += element;
    ++n;
    return true;
  });
  if (!walked || !verbatim) return projectWithLibbson(doc, out);
  appendRun();
  out.push_back('\0');
  uint32_t len = BSON_UINT32_TO_LE(static_cast<uint32_t>(out.size()));
  std::memcpy(out.data(), &len, 4);
}

}  // namespace shardscope::evaluation
