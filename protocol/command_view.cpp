#include "protocol/command_view.h"

#include <cstring>

#include "protocol/bson_elements.h"

namespace shardscope::protocol {
namespace {

// A string element's value, without its length prefix and NUL (bson_iter_utf8's view).
std::string_view utf8Value(const BsonElement& e) {
  return {reinterpret_cast<const char*>(e.value + 4), e.value_len - 5};
}

// The first key of an embedded document's bytes (empty when it has none or is cut short).
std::string_view firstKeyOf(const BsonElement& e) {
  if (e.value_len < 7) return {};  // length, type, a key's NUL, the terminator
  const auto* key = reinterpret_cast<const char*>(e.value + 5);
  const void* end = std::memchr(key, 0, e.value_len - 5);
  return end ? std::string_view(key, static_cast<const char*>(end) - key) : std::string_view{};
}

// The command name: its traits, the collection it names, a getMore's cursor id.
void readFirstElement(const BsonElement& e, CommandView& out) {
  out.setName(e.key);  // the one classification of this request
  // An explain of a command carrying credentials (createUser's pwd) carries them too.
  if (out.traits.kind == CommandKind::Explain && e.type == BSON_TYPE_DOCUMENT &&
      classifyCommand(firstKeyOf(e)).carries_secrets)
    out.traits.carries_secrets = true;
  if (e.type == BSON_TYPE_UTF8 && !out.traits.first_value_not_collection) out.collection = utf8Value(e);
  if (out.traits.kind == CommandKind::GetMore && e.type == BSON_TYPE_INT64) out.cursorId = asInt64(e.type, e.value);
}

// One of the keys after the name. Dispatched on the key's length first: most keys match none.
void readOtherElement(const BsonElement& e, CommandView& out) {
  const std::string_view key = e.key;
  switch (key.size()) {
    case 3:
      if (key == "$db" && e.type == BSON_TYPE_UTF8) out.db = utf8Value(e);
      break;
    case 4:
      if (key == "lsid") out.hasLsid = true;
      break;
    case 9:
      if (key == "txnNumber") out.hasTxnNumber = true;
      else if (key == "collation") out.hasCollation = true;
      break;
    case 10:
      if (key == "autocommit") out.inTransaction = true;
      else if (key == "collection" && out.traits.kind == CommandKind::GetMore && e.type == BSON_TYPE_UTF8)
        out.collection = utf8Value(e);
      break;
    case 16:
      if (key == "startTransaction") out.inTransaction = true;
      break;
    case 23:
      // A hello that starts authentication carries the first SCRAM or X.509 message (the user
      // name), and its reply the server's (salt, nonce): credentials, like saslStart's.
      if (key == "speculativeAuthenticate" && out.traits.kind == CommandKind::Hello) out.traits.carries_secrets = true;
      break;
    default: break;
  }
}

void reset(CommandView& out) {
  out.name = {};
  out.traits = {};
  out.db = {};
  out.collection = {};
  out.sequences = {};
  out.cursorId.reset();
  out.hasLsid = out.hasTxnNumber = out.inTransaction = out.moreToCome = out.exhaustAllowed = false;
  out.bodyScanned = out.hasCollation = false;
  out.indexedKeys = CommandView::kNotIndexed;
}

}  // namespace

CommandViewScan::CommandViewScan(CommandView& view) : view_(view) { reset(view_); }

void CommandViewScan::element(const BsonElement& e) {
  if (indexed_ < CommandView::kIndexedKeys && e.offset <= UINT16_MAX && e.key.size() <= UINT8_MAX) {
    view_.keyOffsets[indexed_] = static_cast<uint16_t>(e.offset);
    view_.keyLengths[indexed_++] = static_cast<uint8_t>(e.key.size());
  } else {
    all_indexed_ = false;
  }
  if (first_) {
    readFirstElement(e, view_);
    first_ = false;
  } else {
    readOtherElement(e, view_);
  }
}

void CommandViewScan::done() {
  view_.indexedKeys = all_indexed_ ? indexed_ : CommandView::kNotIndexed;
  view_.bodyScanned = true;
  complete_ = true;
}

namespace {

// The body's elements with BsonElements (bson_iter_next's framing, elements and stopping point,
// checked against it in tests/protocol/bson_elements_test.cpp) at a fraction of its instructions.
// `data` and `size`: the bytes out.body was made static over.
void fillFromBody(CommandView& out, const uint8_t* data, uint32_t size) {
  CommandViewScan scan(out);
  BsonElements elements(data, size);
  BsonElement e;
  while (elements.next(e)) scan.element(e);
  scan.done();
}

}  // namespace

const DocumentSequence* CommandView::findSequence(std::string_view identifier) const {
  for (const auto& s : sequences)
    if (s.identifier == identifier) return &s;
  return nullptr;
}

std::string_view CommandView::ns(std::string& buffer) const {
  if (collection.empty()) return {};
  buffer.assign(db);
  buffer.push_back('.');
  buffer.append(collection);
  return buffer;
}

ParseResult buildCommandView(const OpMsg& msg, CommandView& out, const CommandViewScan* scan) {
  const bool scanned = scan && scan->complete();
  if (!scanned) reset(out);
  if (!bson_init_static(&out.body, msg.body.data(), msg.body.size())) return ParseResult::malformed("OP_MSG body is not BSON");
  if (!scanned) fillFromBody(out, msg.body.data(), static_cast<uint32_t>(msg.body.size()));
  if (out.name.empty()) return ParseResult::malformed("command body is empty");
  if (out.db.empty()) return ParseResult::malformed("command has no string $db");
  out.sequences = msg.sequences;
  out.moreToCome = msg.flags & kMoreToCome;
  out.exhaustAllowed = msg.flags & kExhaustAllowed;
  return ParseResult::success();
}

ParseResult buildCommandViewFromQuery(std::string_view fullCollectionName, std::span<const uint8_t> query,
                                      CommandView& out) {
  reset(out);
  auto dot = fullCollectionName.find('.');
  if (dot == std::string_view::npos || fullCollectionName.substr(dot + 1) != "$cmd")
    return ParseResult::malformed("legacy OP_QUERY is not a command");
  if (!bson_init_static(&out.body, query.data(), query.size())) return ParseResult::malformed("OP_QUERY query is not BSON");
  // Commands with a read preference arrive wrapped as {$query: {...}, $readPreference: ...}.
  bson_iter_t it;
  if (bson_iter_init_find(&it, &out.body, "$query") && BSON_ITER_HOLDS_DOCUMENT(&it)) {
    uint32_t len = 0;
    const uint8_t* data = nullptr;
    bson_iter_document(&it, &len, &data);
    if (!bson_init_static(&out.body, data, len)) return ParseResult::malformed("OP_QUERY $query is not BSON");
  }
  fillFromBody(out, bson_get_data(&out.body), out.body.len);
  if (out.name.empty()) return ParseResult::malformed("command body is empty");
  out.db = fullCollectionName.substr(0, dot);
  return ParseResult::success();
}

}  // namespace shardscope::protocol
