// What a reply says, read once: the pipeline parses each reply body into ReplyFacts with one pass
// over its top-level fields (and the cursor's), and every feature reads the facts instead of the
// body. Views only (no copies, no allocation): the facts live as long as the reply's bytes.
#pragma once
#include <bson/bson.h>

#include <array>
#include <cstddef>
#include <cstdint>
#include <new>
#include <type_traits>
#include <span>
#include <string_view>

namespace shardscope::protocol {

// One element of a reply document, named by where it lies (a view: no copy); `present` is false
// when the reply has no such field. 24 bytes, where a kept bson_iter_t (128-byte aligned) took 256:
// a reply's facts are made for every reply, and zeroing 6.4 KB of them cost ~1.3k of the
// forwarding path's 12.5k instructions per operation (issue 29).
struct ElementView {
  const uint8_t* doc = nullptr;  // the document (or array) holding the element
  uint32_t doc_len = 0;
  uint32_t offset = 0;  // of the element's type byte in `doc`
  uint32_t key_len = 0;
  bool present = false;

  // An iterator positioned at the element (present only).
  bson_iter_t iter() const;
  std::string_view key() const { return present ? std::string_view(reinterpret_cast<const char*>(doc) + offset + 1, key_len) : ""; }
  bson_type_t type() const { return present ? static_cast<bson_type_t>(doc[offset]) : BSON_TYPE_EOD; }
  // A document or array value as a static bson_t (false for other types).
  bool asDocument(bson_t& out) const;
  // An iterator over a document or array value's elements (false for other types).
  bool children(bson_iter_t& out) const;
};

struct ReplyFacts {
  // Not an aggregate, so that ReplyFacts{} leaves the other fields' storage unwritten too.
  ReplyFacts() {}

  static constexpr size_t kMaxCodes = 8;        // error codes kept (write errors past it are counted)
  static constexpr size_t kMaxOtherFields = 16;  // top-level fields no fact names, kept as views

  bool parsed = false;  // false: no reply document, or it did not parse (every fact below is empty)
  bool has_ok = false;
  bool ok = false;                // the ok field's truth (false when it is missing)
  int32_t code = 0;               // ok:0's code (0 otherwise)
  std::string_view code_name;     // ok:0's codeName
  std::string_view errmsg;
  bool has_cursor = false;
  int64_t cursor_id = 0;
  bool exhausted() const { return has_cursor && cursor_id == 0; }
  std::string_view cursor_ns;
  ElementView batch;              // cursor.firstBatch / nextBatch (an array), or empty
  bool first_batch = false;       // `batch` is the firstBatch (a find's or aggregate's own reply)
  bool has_n = false, has_n_modified = false, has_n_matched = false;
  int64_t n = 0, n_modified = 0, n_matched = 0;
  ElementView n_matched_field;    // nMatched as it is in the reply (the mirror digests it)
  ElementView upserted;           // update's [{index, _id}] array, or empty
  ElementView write_errors;       // the writeErrors array, or empty
  uint32_t write_error_count = 0;
  ElementView write_concern_error;  // a document, or empty
  int32_t write_concern_code = 0;
  ElementView last_error_object;  // findAndModify's lastErrorObject, or empty
  // Error codes in reply order: the writeErrors' codes, the writeConcernError's, then ok:0's
  // code; codes past kMaxCodes are counted in extra_codes.
  std::array<int32_t, kMaxCodes> codes{};
  uint8_t code_count = 0;
  uint64_t extra_codes = 0;
  // An error reply (ok:0), or one reporting write errors or a write concern error.
  bool error() const { return (has_ok && !ok) || write_error_count > 0 || write_concern_error.present; }
  // Every other top-level field (distinct's values, findAndModify's value, $clusterTime, ...), in
  // order, up to kMaxOtherFields; the rest are counted.
  uint8_t other_count = 0;
  uint32_t others_dropped = 0;
  std::span<const ElementView> otherFields() const {
    return {std::launder(reinterpret_cast<const ElementView*>(others_)), other_count};
  }
  // Keeps the next other field (other_count < kMaxOtherFields).
  ElementView& addOther() { return *new (others_ + sizeof(ElementView) * other_count++) ElementView; }
  // The first other field named `key` (distinct's values, findAndModify's value), or null.
  const ElementView* other(std::string_view key) const {
    for (const auto& f : otherFields())
      if (f.key() == key) return &f;
    return nullptr;
  }
  // A field of findAndModify's lastErrorObject (n, upserted, updatedExisting); false when absent.
  bool lastError(const char* key, bson_iter_t& out) const {
    bson_iter_t it;
    return last_error_object.children(it) && bson_iter_find(&it, key) && (out = it, true);
  }

 private:
  // Raw storage: only the first other_count hold views. Every reply makes its facts, and 16 views
  // zeroed for the one or two a reply has cost ~60 instructions per operation (issue 29).
  alignas(ElementView) std::byte others_[sizeof(ElementView) * kMaxOtherFields];
};
static_assert(std::is_trivially_copyable_v<ElementView> && std::is_trivially_destructible_v<ElementView>);

// The one reply parser. Linear in the reply's top-level fields plus its cursor's and its
// writeErrors' entries; never fails (a document that does not parse gives parsed=false).
ReplyFacts readReplyFacts(const bson_t* body);
ReplyFacts readReplyFacts(std::span<const uint8_t> bsonBytes);

// How many replies readReplyFacts has parsed on this thread (tests: each reply is parsed once).
uint64_t replyFactsParsed();

}  // namespace shardscope::protocol
