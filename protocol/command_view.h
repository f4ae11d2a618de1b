// A read-only view of a command (OP_MSG body plus document sequences, or a legacy OP_QUERY
// command): what routing, statistics and rewrites need, without copying the message.
#pragma once
#include <bson/bson.h>

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>

#include "protocol/command_kind.h"
#include "protocol/op_msg.h"
#include "protocol/status.h"

namespace shardscope::protocol {

struct CommandView {
  // First: bson_t is 128-byte aligned, so the fields before it padded the view to 384 bytes (every
  // session holds one; issue 29); after it they fit in 256.
  bson_t body;                  // static bson over the message buffer (never destroyed/owned)
  std::string_view name;        // first key of the body, as sent (e.g. "find", "isMaster")
  CommandTraits traits;         // `name` classified once, when the view is built (command_kind.h)
  // The name statistics and shape ids file it under: `name`, or the one a legacy spelling stands for.
  std::string_view filedName() const { return protocol::filedName(traits, name); }
  std::string_view db;          // "$db" (OP_MSG) or the db part of "db.$cmd" (OP_QUERY)
  std::string_view collection;  // empty when the command names no collection
  std::span<const DocumentSequence> sequences;  // OP_MSG kind-1 sections
  std::optional<int64_t> cursorId;              // getMore
  bool hasLsid = false;
  bool hasTxnNumber = false;
  bool inTransaction = false;   // autocommit or startTransaction: a statement of a transaction
  bool moreToCome = false;
  bool exhaustAllowed = false;
  // Set when the view was built from a message (every body key seen once): then hasCollation says
  // whether the body has a "collation" key, so targeting need not scan the body for one that is
  // almost never there. Views built by hand leave bodyScanned false and readers scan.
  bool bodyScanned = false;
  bool hasCollation = false;
  // Where the body's top-level elements start (offset, key length), in order: with bodyScanned,
  // a reader finds a field without walking the body again (the query shape, per request). Kept
  // for the first kIndexedKeys elements at offsets below 64 KiB; past that `indexedKeys` is
  // kNotIndexed and readers scan. Sized to fill the view's padding: it stays 256 bytes.
  static constexpr uint8_t kIndexedKeys = 8;
  static constexpr uint8_t kNotIndexed = UINT8_MAX;
  uint8_t indexedKeys = kNotIndexed;
  uint16_t keyOffsets[kIndexedKeys];
  uint8_t keyLengths[kIndexedKeys];

  // For views built by hand (tests, the explain CLI): the name and its traits.
  void setName(std::string_view n) {
    name = n;
    traits = classifyCommand(n);
  }
  const DocumentSequence* findSequence(std::string_view identifier) const;
  // "db.collection", written into `buffer`; empty when there is no collection.
  std::string_view ns(std::string& buffer) const;
};
static_assert(sizeof(CommandView) == 256, "every session holds one: keep it at 256 bytes");

// A view's body facts, read from the body's top-level elements as decodeOpMsg validates them: the
// body is read once instead of twice (issue 29). Pass it to decodeOpMsg, then to buildCommandView.
class CommandViewScan final : public BodyElementVisitor {
 public:
  explicit CommandViewScan(CommandView& view);  // the view starts over
  void element(const BsonElement& e) override;
  void done() override;
  bool complete() const { return complete_; }  // every element seen (decodeOpMsg validated the body)

 private:
  CommandView& view_;
  uint8_t indexed_ = 0;
  bool all_indexed_ = true, first_ = true, complete_ = false;
};

// Builds the view over an already decoded OP_MSG. Fails (Malformed) when the body has no
// command name or no string "$db". `scan`: the body's facts read while it was decoded (complete),
// or the body is read here.
ParseResult buildCommandView(const OpMsg& msg, CommandView& out, const CommandViewScan* scan = nullptr);

// Builds the view over a legacy OP_QUERY command ("db.$cmd"), unwrapping a {$query: ...} wrapper.
ParseResult buildCommandViewFromQuery(std::string_view fullCollectionName, std::span<const uint8_t> query,
                                      CommandView& out);

}  // namespace shardscope::protocol
