// What a MongoDB 6.0+ server does with a client request the proxy must not forward as it is, so the
// proxy can do the same (docs: "Behaviour at the edges" in the README):
//   - an OP_MSG whose command document is empty or has no usable `$db`: answered with an error,
//     the connection stays open;
//   - legacy opcodes (removed in 6.0): OP_GET_MORE and non-handshake OP_QUERY are answered with
//     an error; OP_INSERT, OP_UPDATE, OP_DELETE, OP_KILL_CURSORS (which have no reply) and a
//     client-sent OP_REPLY close the connection;
//   - OP_COMPRESSED with a compressor that is not enabled (negotiated or not): closed.
#pragma once
#include <cstdint>
#include <optional>
#include <span>
#include <string_view>

#include "protocol/command_kind.h"
#include "protocol/compression.h"
#include "protocol/error_reply.h"

namespace shardscope::protocol {

// The error mongod answers an OP_MSG command document with, or nullopt when the document names a
// command and has a non-empty string `$db` (anything else, unknown commands included, goes upstream).
std::optional<ServerError> commandDocumentError(std::span<const uint8_t> body);

// Legacy opcodes other than OP_QUERY.
struct LegacyOpcodeRule {
  bool answer = false;        // true: answer `error` as an OP_REPLY QueryFailure; false: close
  ServerError error;
  std::string_view reason;    // for the log when the connection is closed
};
LegacyOpcodeRule legacyOpcodeRule(int32_t opCode);

// OP_QUERY is served only for the handshake: hello / isMaster on "<db>.$cmd".
bool isHandshakeOpQuery(const CommandTraits& command);
ServerError opQueryNotACommandError();                          // a legacy find: QueryFailure
ServerError unsupportedOpQueryCommandError(std::string_view name);  // any other command: error document

// The compressor id of an OP_COMPRESSED frame (nullopt when the frame is too short to have one),
// read before anything is inflated.
std::optional<uint8_t> compressorIdOf(std::span<const uint8_t> frame);
// True when `id` is one of the compressors the proxy enables for clients (compression.client),
// whatever this connection negotiated: mongod, too, looks the id up in its process-wide registry
// of enabled compressors. noop only when listed.
bool isEnabledCompressor(uint8_t id, std::span<const Compressor> enabled);

}  // namespace shardscope::protocol
