// What a command is, from its name: the one table of command names (protocol/command_kind.cpp).
// A request is classified once, when its CommandView is built (CommandView::traits); the request
// pipeline, targeting, statistics, evaluation, the mirror, the capture and the rewrite read those
// traits instead of comparing names themselves.
#pragma once
#include <cstdint>
#include <string_view>

namespace shardscope::protocol {

enum class CommandKind : uint8_t {
  Other,  // anything the table gives no kind (listCollections, createIndexes, ping, ...)
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
  Explain,  // wraps another command (classified on its own where it is read)
  CommitTransaction,  // ends a multi-document transaction: its writes take effect when it answers ok
  AbortTransaction,   // ends one: its writes never happened
};

// How the mirror treats a command by its name; the mirror refines it from the body (an aggregate
// with $out/$merge writes, a statement with autocommit/startTransaction is in a transaction).
enum class MirrorClass : uint8_t {
  Other,        // handshake, auth, sessions, diagnostics: never mirrored
  Read,         // find, aggregate, count, distinct
  Write,        // insert, update, delete, findAndModify, bulkWrite, catalog changes (DDL)
  Cursor,       // getMore, killCursors: follow the cursor of a mirrored command
  Transaction,  // commitTransaction, abortTransaction
};

enum class LegacySpelling : uint8_t { None, IsMaster, FindAndModify };

// Where a command tells a collection's default collation (statements carrying no collation run
// under it): `create` sets it (its `collation` option, simple when absent), `listCollections`'
// reply lists each collection's (`options.collation`).
enum class DefaultCollationSource : uint8_t { None, Create, ListCollections };

struct CommandTraits {
  CommandKind kind = CommandKind::Other;
  MirrorClass mirror = MirrorClass::Other;
  bool never_compressed = false;  // travels uncompressed on every hop (handshake, credentials)
  bool carries_secrets = false;   // credentials in the body or its reply (also a hello with
                                  // speculativeAuthenticate): neither is ever captured
  bool never_faulted = false;     // handshake and authentication: fault injection skips them
  bool reads = false;             // find, aggregate, count, distinct: a filter that targeting reads
  bool writes = false;            // insert, update, delete, findAndModify, bulkWrite
  bool continues_cursor = false;  // getMore, killCursors: targeted by the cursor's shards
  bool ddl = false;               // changes the catalog (create, drop, createIndexes, ...)
  bool collection_wide = false;   // runs on every shard owning the collection's chunks
  bool first_value_not_collection = false;  // its first value is a string that names no collection
  // A legacy spelling the server accepts ("ismaster", "findandmodify"): which name it stands for
  // (filedName), under which statistics and shape ids file it: one shape, one id, one row whichever
  // spelling a client sends. One byte: every session holds a CommandView of 256 bytes.
  LegacySpelling spelling = LegacySpelling::None;
  DefaultCollationSource collation_source = DefaultCollationSource::None;
};

// The name statistics and shape ids file a command under: `name` as sent, or the name a legacy
// spelling stands for.
std::string_view filedName(const CommandTraits& traits, std::string_view name);

// Exact match, as the server matches names (plus its two legacy lower-case spellings). A name
// that only differs in case from a credential-carrying command still says carries_secrets.
CommandTraits classifyCommand(std::string_view name);
// The name is one of the table's, matched as classifyCommand matches it: the commands statistics
// keep a row for whatever other names clients invent.
bool isListedCommand(std::string_view name);
std::string_view commandKindName(CommandKind kind);
std::string_view mirrorClassName(MirrorClass c);

}  // namespace shardscope::protocol
