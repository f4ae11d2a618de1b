// Legacy OP_QUERY and OP_REPLY: still used by drivers for the first hello (isMaster).
#pragma once
#include <cstdint>
#include <span>
#include <string_view>
#include <vector>

#include "protocol/status.h"
#include "protocol/wire.h"

namespace shardscope::protocol {

struct OpQuery {
  MsgHeader header;
  int32_t flags = 0;
  std::string_view fullCollectionName;  // "admin.$cmd" for commands
  int32_t numberToSkip = 0;
  int32_t numberToReturn = 0;
  std::span<const uint8_t> query;
  std::span<const uint8_t> returnFieldsSelector;  // may be empty
};

struct OpReply {
  MsgHeader header;
  int32_t responseFlags = 0;
  int64_t cursorId = 0;
  int32_t startingFrom = 0;
  int32_t numberReturned = 0;
  std::span<const uint8_t> documents;  // concatenated BSON documents
};

ParseResult decodeOpQuery(std::span<const uint8_t> message, OpQuery& out);
ParseResult decodeOpReply(std::span<const uint8_t> message, OpReply& out);

void encodeOpQuery(const OpQuery& q, std::vector<uint8_t>& out);
void encodeOpReply(const OpReply& r, std::vector<uint8_t>& out);

}  // namespace shardscope::protocol
