#include "protocol/request_rules.h"

#include <bson/bson.h>

#include <algorithm>
#include <string>

#include "protocol/hello.h"
#include "protocol/wire.h"

namespace shardscope::protocol {
namespace {

constexpr std::string_view kUpgradeHint =
    " The client driver may require an upgrade. For more details see https://dochub.mongodb.org/core/legacy-opcode-removal";

// Codes as the server reports them (error_codes.yml names; "Location<N>" for unnamed assertion ids).
constexpr int32_t kCommandNotFound = 59;
constexpr int32_t kInvalidNamespace = 73;
constexpr int32_t kUnsupportedOpQueryCommand = 352;
constexpr int32_t kWrongType = 13111;       // BSONElement type check
constexpr int32_t kNoDollarDb = 40571;      // "OP_MSG requests require a $db argument"
constexpr int32_t kLegacyOpcodeRemoved = 5739101;

ServerError legacyRemoved(std::string_view opName) {
  return {kLegacyOpcodeRemoved, "Location5739101", std::string(opName) + " is no longer supported." + std::string(kUpgradeHint)};
}

}  // namespace

std::optional<ServerError> commandDocumentError(std::span<const uint8_t> body) {
  bson_t doc;
  bson_iter_t it;
  if (!bson_init_static(&doc, body.data(), body.size()) || !bson_iter_init(&it, &doc)) return std::nullopt;
  // No command name (an empty document, or an empty first key): no command by that name.
  if (!bson_iter_next(&it) || bson_iter_key_len(&it) == 0)
    return ServerError{kCommandNotFound, "CommandNotFound", "no such command: ''"};
  if (!bson_iter_init_find(&it, &doc, "$db"))
    return ServerError{kNoDollarDb, "Location40571", "OP_MSG requests require a $db argument"};
  if (!BSON_ITER_HOLDS_UTF8(&it))
    return ServerError{kWrongType, "Location13111",
                       "wrong type for field ($db) " + std::to_string(static_cast<int>(bson_iter_type(&it))) + " != 2"};
  uint32_t len = 0;
  bson_iter_utf8(&it, &len);
  if (len == 0) return ServerError{kInvalidNamespace, "InvalidNamespace", "Invalid database name: ''"};
  return std::nullopt;
}

LegacyOpcodeRule legacyOpcodeRule(int32_t opCode) {
  const std::string_view name = opCodeName(opCode);
  switch (static_cast<OpCode>(opCode)) {
    case OpCode::GetMore:  // expects an OP_REPLY: the server answers with a query failure
      return {true, legacyRemoved(name), {}};
    case OpCode::Reply:
      return {false, {}, "client sent OP_REPLY (a server-to-client message)"};
    case OpCode::Insert:
    case OpCode::Update:
    case OpCode::Delete:
    case OpCode::KillCursors:
      return {false, {}, "legacy opcode removed in MongoDB 6.0 (no reply is defined for it)"};
    default:
      return {false, {}, "opcode not accepted from a client"};
  }
}

bool isHandshakeOpQuery(const CommandTraits& command) { return command.kind == CommandKind::Hello; }

ServerError opQueryNotACommandError() { return legacyRemoved("OP_QUERY"); }

ServerError unsupportedOpQueryCommandError(std::string_view name) {
  return {kUnsupportedOpQueryCommand, "UnsupportedOpQueryCommand",
          "Unsupported OP_QUERY command: " + std::string(name) + "." + std::string(kUpgradeHint)};
}

std::optional<uint8_t> compressorIdOf(std::span<const uint8_t> frame) {
  constexpr size_t kIdAt = kHeaderSize + 4 + 4;  // header, originalOpcode, uncompressedSize
  if (frame.size() <= kIdAt) return std::nullopt;
  return frame[kIdAt];
}

bool isEnabledCompressor(uint8_t id, std::span<const Compressor> enabled) {
  return std::any_of(enabled.begin(), enabled.end(), [&](Compressor c) { return static_cast<uint8_t>(c) == id; });
}

}  // namespace shardscope::protocol
