#include "protocol/command_view.h"

#include <cstring>

namespace shardscope::protocol {
namespace {

std::string_view utf8Value(const bson_iter_t& it) {
  uint32_t len = 0;
  const char* s = bson_iter_utf8(&it, &len);
  return {s, len};
}

void fillFromBody(CommandView& out) {
  bson_iter_t it;
  if (!bson_iter_init(&it, &out.body)) return;
  bool first = true;
  uint8_t indexed = 0;
  bool all = true;
  while (bson_iter_next(&it)) {
    std::string_view key(bson_iter_key(&it), bson_iter_key_len(&it));
    if (indexed < CommandView::kIndexedKeys && it.off <= UINT16_MAX && key.size() <= UINT8_MAX) {
      out.keyOffsets[indexed] = static_cast<uint16_t>(it.off);
      out.keyLengths[indexed++] = static_cast<uint8_t>(key.size());
    } else {
      all = false;
    }
    if (first) {
      out.setName(key);  // the one classification of this request
      if (BSON_ITER_HOLDS_UTF8(&it) && !out.traits.first_value_not_collection) out.collection = utf8Value(it);
      if (out.traits.kind == CommandKind::GetMore && BSON_ITER_HOLDS_INT64(&it)) out.cursorId = bson_iter_int64(&it);
      first = false;
      continue;
    }
    if (key == "$db" && BSON_ITER_HOLDS_UTF8(&it)) out.db = utf8Value(it);
    else if (key == "lsid") out.hasLsid = true;
    else if (key == "txnNumber") out.hasTxnNumber = true;
    else if (key == "autocommit" || key == "startTransaction") out.inTransaction = true;
    else if (key == "collation") out.hasCollation = true;
    else if (key == "collection" && out.traits.kind == CommandKind::GetMore && BSON_ITER_HOLDS_UTF8(&it))
      out.collection = utf8Value(it);
  }
  out.indexedKeys = all ? indexed : CommandView::kNotIndexed;
  out.bodyScanned = true;
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

ParseResult buildCommandView(const OpMsg& msg, CommandView& out) {
  reset(out);
  if (!bson_init_static(&out.body, msg.body.data(), msg.body.size())) return ParseResult::malformed("OP_MSG body is not BSON");
  fillFromBody(out);
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
  fillFromBody(out);
  if (out.name.empty()) return ParseResult::malformed("command body is empty");
  out.db = fullCollectionName.substr(0, dot);
  return ParseResult::success();
}

}  // namespace shardscope::protocol
