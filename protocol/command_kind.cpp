// The one table of command names. Names are matched exactly as sent (the server is
// case-sensitive except for the legacy "ismaster" and "findandmodify" spellings, listed on their
// own); credential-carrying names are also recognised in any case, so nothing captures them.
#include "protocol/command_kind.h"

#include <array>
#include <strings.h>

namespace shardscope::protocol {
namespace {

struct Entry {
  std::string_view name;
  CommandTraits traits;
};

using K = CommandKind;
using M = MirrorClass;
constexpr CommandTraits kHello{.kind = K::Hello, .never_compressed = true, .never_faulted = true};
constexpr CommandTraits kAuth{.kind = K::Auth, .never_compressed = true, .carries_secrets = true};
constexpr CommandTraits kSecret{.never_compressed = true, .carries_secrets = true};  // carries credentials
constexpr CommandTraits kRead(K kind) { return {.kind = kind, .mirror = M::Read, .reads = true}; }
constexpr CommandTraits kWrite(K kind) { return {.kind = kind, .mirror = M::Write, .writes = true}; }
constexpr CommandTraits kCursor(K kind) { return {.kind = kind, .mirror = M::Cursor, .continues_cursor = true}; }
constexpr CommandTraits kDdl{.mirror = M::Write, .ddl = true};
constexpr CommandTraits kDdlEveryShard{.mirror = M::Write, .ddl = true, .collection_wide = true};
constexpr CommandTraits kEveryShard{.collection_wide = true};
constexpr CommandTraits kEndsTransaction{.mirror = M::Transaction};
constexpr CommandTraits kNamesNoCollection{.first_value_not_collection = true};

constexpr CommandTraits with(CommandTraits t, bool never_faulted, bool first_value_not_collection) {
  t.never_faulted = never_faulted;
  t.first_value_not_collection = first_value_not_collection;
  return t;
}

constexpr std::array kTable = {
    Entry{"hello", kHello},
    Entry{"isMaster", kHello},
    Entry{"ismaster", kHello},
    Entry{"saslStart", with(kAuth, true, true)},
    Entry{"saslContinue", with(kAuth, true, false)},
    Entry{"authenticate", with(kAuth, true, true)},
    Entry{"getnonce", kAuth},
    Entry{"copydbSaslStart", kAuth},
    Entry{"copydbgetnonce", kAuth},
    Entry{"createUser", kSecret},
    Entry{"updateUser", kSecret},
    Entry{"copydb", kSecret},
    Entry{"endSessions", CommandTraits{.never_faulted = true}},
    Entry{"find", kRead(K::Find)},
    Entry{"aggregate", kRead(K::Aggregate)},
    Entry{"count", kRead(K::Count)},
    Entry{"distinct", kRead(K::Distinct)},
    Entry{"insert", kWrite(K::Insert)},
    Entry{"update", kWrite(K::Update)},
    Entry{"delete", kWrite(K::Delete)},
    Entry{"findAndModify", kWrite(K::FindAndModify)},
    Entry{"findandmodify", kWrite(K::FindAndModify)},
    Entry{"bulkWrite", kWrite(K::BulkWrite)},
    Entry{"getMore", kCursor(K::GetMore)},
    Entry{"killCursors", kCursor(K::KillCursors)},
    Entry{"explain", CommandTraits{.kind = K::Explain}},
    Entry{"create", kDdl},
    Entry{"renameCollection", with(kDdl, false, true)},
    Entry{"dropDatabase", kDdl},
    Entry{"drop", kDdlEveryShard},
    Entry{"createIndexes", kDdlEveryShard},
    Entry{"dropIndexes", kDdlEveryShard},
    Entry{"collMod", kDdlEveryShard},
    Entry{"validate", kEveryShard},
    Entry{"collStats", kEveryShard},
    Entry{"reIndex", kEveryShard},
    Entry{"commitTransaction", kEndsTransaction},
    Entry{"abortTransaction", kEndsTransaction},
    Entry{"shardCollection", kNamesNoCollection},
    Entry{"reshardCollection", kNamesNoCollection},
    Entry{"analyzeShardKey", kNamesNoCollection},
    Entry{"configureQueryAnalyzer", kNamesNoCollection},
    Entry{"mapreduce.shardedfinish", kNamesNoCollection},
};

}  // namespace

CommandTraits classifyCommand(std::string_view name) {
  for (const auto& e : kTable)
    if (e.name == name) return e.traits;
  // Never captured, whatever the case it is spelled in (the server would refuse it anyway).
  for (const auto& e : kTable)
    if (e.traits.carries_secrets && e.name.size() == name.size() &&
        strncasecmp(e.name.data(), name.data(), name.size()) == 0)
      return CommandTraits{.carries_secrets = true};
  return {};
}

std::string_view commandKindName(CommandKind kind) {
  switch (kind) {
    case K::Hello: return "hello";
    case K::Auth: return "auth";
    case K::Find: return "find";
    case K::Aggregate: return "aggregate";
    case K::Count: return "count";
    case K::Distinct: return "distinct";
    case K::Insert: return "insert";
    case K::Update: return "update";
    case K::Delete: return "delete";
    case K::FindAndModify: return "findAndModify";
    case K::BulkWrite: return "bulkWrite";
    case K::GetMore: return "getMore";
    case K::KillCursors: return "killCursors";
    case K::Explain: return "explain";
    case K::Other: break;
  }
  return "other";
}

std::string_view mirrorClassName(MirrorClass c) {
  switch (c) {
    case M::Read: return "read";
    case M::Write: return "write";
    case M::Cursor: return "cursor";
    case M::Transaction: return "transaction";
    case M::Other: break;
  }
  return "other";
}

}  // namespace shardscope::protocol
