// What a command is, from its name, classified once per request from one table: the request
// pipeline, targeting, statistics and the mirror ask this instead of comparing names themselves.
#pragma once
#include <cstdint>
#include <string_view>

namespace shardscope::protocol {

enum class CommandKind : uint8_t {
  Other,  // anything the table does not name (listCollections, createIndexes, ping, ...)
  Hello,  // hello, isMaster, ismaster: the handshake and monitoring
  Auth,   // saslStart, saslContinue, authenticate, getnonce, ...
  Find,
  Aggregate,
  Count,
  Distinct,
  Insert,
  Update,
  Delete,
  FindAndModify,
  BulkWrite,
  GetMore,
  KillCursors,
};

struct CommandTraits {
  CommandKind kind = CommandKind::Other;
  bool never_compressed = false;  // travels uncompressed on every hop (handshake, credentials)
  bool reads = false;             // find, aggregate, count, distinct: a filter that targeting reads
  bool writes = false;            // insert, update, delete, findAndModify, bulkWrite
  bool continues_cursor = false;  // getMore, killCursors: targeted by the cursor's shards
};

CommandTraits classifyCommand(std::string_view name);
std::string_view commandKindName(CommandKind kind);

}  // namespace shardscope::protocol
