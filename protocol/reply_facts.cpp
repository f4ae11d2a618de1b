#include "protocol/reply_facts.h"

namespace shardscope::protocol {

namespace {

thread_local uint64_t t_parsed = 0;  // per thread: no shared cache line on the reply path

int64_t numberOr0(const bson_iter_t& it) { return BSON_ITER_HOLDS_NUMBER(&it) ? bson_iter_as_int64(&it) : 0; }

std::string_view utf8Of(const bson_iter_t& it) {
  if (!BSON_ITER_HOLDS_UTF8(&it)) return {};
  uint32_t len = 0;
  const char* s = bson_iter_utf8(&it, &len);
  return {s, len};
}

void keep(ElementView& view, const bson_iter_t& it) {
  view.present = true;
  view.doc = it.raw;
  view.doc_len = it.len;
  view.offset = it.off;
  view.key_len = bson_iter_key_len(&it);
}

// The `code` of a writeErrors entry or of the writeConcernError document (0 when none).
int32_t codeIn(const bson_iter_t& doc) {
  bson_iter_t child;
  if (BSON_ITER_HOLDS_DOCUMENT(&doc) && bson_iter_recurse(&doc, &child) && bson_iter_find(&child, "code"))
    return static_cast<int32_t>(numberOr0(child));
  return 0;
}

void addCode(ReplyFacts& f, int32_t code) {
  if (f.code_count < ReplyFacts::kMaxCodes) f.codes[f.code_count++] = code;
  else ++f.extra_codes;
}

void readCursor(ReplyFacts& f, const bson_iter_t& cursor) {
  f.has_cursor = true;
  bson_iter_t c;
  if (!bson_iter_recurse(&cursor, &c)) return;
  while (bson_iter_next(&c)) {
    std::string_view key(bson_iter_key(&c), bson_iter_key_len(&c));
    if (key == "id") f.cursor_id = numberOr0(c);
    else if (key == "ns") f.cursor_ns = utf8Of(c);
    else if ((key == "firstBatch" || key == "nextBatch") && BSON_ITER_HOLDS_ARRAY(&c)) {
      keep(f.batch, c);
      f.first_batch = key == "firstBatch";
    }
  }
}

}  // namespace

bson_iter_t ElementView::iter() const {
  bson_iter_t it{};
  // The element was read before (readReplyFacts): positioning at it cannot fail on the same bytes.
  if (present) bson_iter_init_from_data_at_offset(&it, doc, doc_len, offset, key_len);
  return it;
}

bool ElementView::asDocument(bson_t& out) const {
  if (!present) return false;
  const bson_iter_t it = iter();
  if (!(BSON_ITER_HOLDS_DOCUMENT(&it) || BSON_ITER_HOLDS_ARRAY(&it))) return false;
  uint32_t len = 0;
  const uint8_t* data = nullptr;
  if (BSON_ITER_HOLDS_DOCUMENT(&it)) bson_iter_document(&it, &len, &data);
  else bson_iter_array(&it, &len, &data);
  return data && bson_init_static(&out, data, len);
}

bool ElementView::children(bson_iter_t& out) const {
  if (!present) return false;
  const bson_iter_t it = iter();
  return (BSON_ITER_HOLDS_DOCUMENT(&it) || BSON_ITER_HOLDS_ARRAY(&it)) && bson_iter_recurse(&it, &out);
}

ReplyFacts readReplyFacts(std::span<const uint8_t> bytes) {
  bson_t b;
  if (bytes.size() < 5 || !bson_init_static(&b, bytes.data(), bytes.size())) return readReplyFacts(nullptr);
  return readReplyFacts(&b);
}

ReplyFacts readReplyFacts(const bson_t* body) {
  ++t_parsed;
  ReplyFacts f;
  bson_iter_t it;
  if (!body || !bson_iter_init(&it, body)) return f;
  f.parsed = true;
  while (bson_iter_next(&it)) {
    // string_view compares lengths first: most keys are rejected without touching their bytes.
    std::string_view key(bson_iter_key(&it), bson_iter_key_len(&it));
    if (key == "ok") {
      f.has_ok = true;
      f.ok = bson_iter_as_bool(&it);
    } else if (key == "code") {
      f.code = static_cast<int32_t>(numberOr0(it));
    } else if (key == "codeName") {
      f.code_name = utf8Of(it);
    } else if (key == "errmsg") {
      f.errmsg = utf8Of(it);
    } else if (key == "cursor" && BSON_ITER_HOLDS_DOCUMENT(&it)) {
      readCursor(f, it);
    } else if (key == "n") {
      f.has_n = true;
      f.n = numberOr0(it);
    } else if (key == "nModified") {
      f.has_n_modified = true;
      f.n_modified = numberOr0(it);
    } else if (key == "nMatched") {
      f.has_n_matched = true;
      f.n_matched = numberOr0(it);
      keep(f.n_matched_field, it);
    } else if (key == "upserted" && BSON_ITER_HOLDS_ARRAY(&it)) {
      keep(f.upserted, it);
    } else if (key == "writeErrors" && BSON_ITER_HOLDS_ARRAY(&it)) {
      keep(f.write_errors, it);
      bson_iter_t item;
      if (bson_iter_recurse(&it, &item))
        while (bson_iter_next(&item)) {
          ++f.write_error_count;
          addCode(f, codeIn(item));
        }
    } else if (key == "writeConcernError" && BSON_ITER_HOLDS_DOCUMENT(&it)) {
      keep(f.write_concern_error, it);
      f.write_concern_code = codeIn(it);
      addCode(f, f.write_concern_code);
    } else if (key == "lastErrorObject" && BSON_ITER_HOLDS_DOCUMENT(&it)) {
      keep(f.last_error_object, it);
    } else if (f.other_count < ReplyFacts::kMaxOtherFields) {
      keep(f.others[f.other_count++], it);
    } else {
      ++f.others_dropped;
    }
  }
  // A document corrupt past its header (replies are navigated, not validated): unparsed, as a
  // whole, rather than half-read facts.
  if (it.err_off != 0) f = ReplyFacts{};
  else if (f.ok) f.code = 0;
  else if (f.has_ok) addCode(f, f.code);
  return f;  // the one object returned on every path: built in the caller's storage (NRVO)
}

uint64_t replyFactsParsed() { return t_parsed; }

}  // namespace shardscope::protocol
