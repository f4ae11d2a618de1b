#include "protocol/reply_facts.h"

#include <cstring>

#include "protocol/bson_elements.h"

namespace shardscope::protocol {

namespace {

thread_local uint64_t t_parsed = 0;  // per thread: no shared cache line on the reply path

int64_t numberOr0(const bson_iter_t& it) { return BSON_ITER_HOLDS_NUMBER(&it) ? bson_iter_as_int64(&it) : 0; }

std::string_view utf8Of(const BsonElement& e) {
  if (e.type != BSON_TYPE_UTF8) return {};
  return {reinterpret_cast<const char*>(e.value) + 4, e.value_len - 5};  // without the length and the NUL
}

void keep(ElementView& view, const uint8_t* doc, uint32_t doc_len, const BsonElement& e) {
  view.present = true;
  view.doc = doc;
  view.doc_len = doc_len;
  view.offset = e.offset;
  view.key_len = static_cast<uint32_t>(e.key.size());
}

// An iterator at an element read with BsonElements (for the rare fields read with libbson).
bson_iter_t iterAt(const uint8_t* doc, uint32_t doc_len, const BsonElement& e) {
  bson_iter_t it{};
  bson_iter_init_from_data_at_offset(&it, doc, doc_len, e.offset, static_cast<uint32_t>(e.key.size()));
  return it;
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

// An embedded document or array that bson_iter_recurse would enter (bson_init_static's rules:
// BsonElements checked its length, not its terminator).
bool enterable(const BsonElement& e) { return e.value_len >= 5 && e.value[e.value_len - 1] == 0; }

void readCursor(ReplyFacts& f, const BsonElement& cursor) {
  f.has_cursor = true;
  if (!enterable(cursor)) return;
  BsonElements c(cursor.value, cursor.value_len);
  BsonElement e;
  while (c.next(e)) {
    if (e.key == "id") f.cursor_id = asInt64(e.type, e.value);
    else if (e.key == "ns") f.cursor_ns = utf8Of(e);
    else if ((e.key == "firstBatch" || e.key == "nextBatch") && e.type == BSON_TYPE_ARRAY) {
      keep(f.batch, cursor.value, cursor.value_len, e);
      f.first_batch = e.key == "firstBatch";
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
  if (!body) return f;
  const uint8_t* doc = bson_get_data(body);
  const uint32_t len = body->len;
  f.parsed = true;
  BsonElements elements(doc, len);
  BsonElement e;
  while (elements.next(e)) {
    // string_view compares lengths first: most keys are rejected without touching their bytes.
    const std::string_view key = e.key;
    if (key == "ok") {
      f.has_ok = true;
      f.ok = asBool(e.type, e.value);
    } else if (key == "code") {
      f.code = static_cast<int32_t>(asInt64(e.type, e.value));
    } else if (key == "codeName") {
      f.code_name = utf8Of(e);
    } else if (key == "errmsg") {
      f.errmsg = utf8Of(e);
    } else if (key == "cursor" && e.type == BSON_TYPE_DOCUMENT) {
      readCursor(f, e);
    } else if (key == "n") {
      f.has_n = true;
      f.n = asInt64(e.type, e.value);
    } else if (key == "nModified") {
      f.has_n_modified = true;
      f.n_modified = asInt64(e.type, e.value);
    } else if (key == "nMatched") {
      f.has_n_matched = true;
      f.n_matched = asInt64(e.type, e.value);
      keep(f.n_matched_field, doc, len, e);
    } else if (key == "upserted" && e.type == BSON_TYPE_ARRAY) {
      keep(f.upserted, doc, len, e);
    } else if (key == "writeErrors" && e.type == BSON_TYPE_ARRAY) {
      keep(f.write_errors, doc, len, e);
      const bson_iter_t it = iterAt(doc, len, e);
      bson_iter_t item;
      if (bson_iter_recurse(&it, &item))
        while (bson_iter_next(&item)) {
          ++f.write_error_count;
          addCode(f, codeIn(item));
        }
    } else if (key == "writeConcernError" && e.type == BSON_TYPE_DOCUMENT) {
      keep(f.write_concern_error, doc, len, e);
      f.write_concern_code = codeIn(iterAt(doc, len, e));
      addCode(f, f.write_concern_code);
    } else if (key == "lastErrorObject" && e.type == BSON_TYPE_DOCUMENT) {
      keep(f.last_error_object, doc, len, e);
    } else if (f.other_count < ReplyFacts::kMaxOtherFields) {
      keep(f.addOther(), doc, len, e);
    } else {
      ++f.others_dropped;
    }
  }
  // A document corrupt past its header (replies are navigated, not validated): unparsed, as a
  // whole, rather than half-read facts.
  if (elements.failed()) f = ReplyFacts{};
  else if (f.ok) f.code = 0;
  else if (f.has_ok) addCode(f, f.code);
  return f;  // the one object returned on every path: built in the caller's storage (NRVO)
}

uint64_t replyFactsParsed() { return t_parsed; }

}  // namespace shardscope::protocol
