// The one table of command names. Names are matched exactly as sent (the server is
// case-sensitive except for the legacy "ismaster" and "findandmodify" spellings, listed on their
// own); credential-carrying names are also recognised in any case, so nothing captures them.
#include "protocol/command_kind.h"

#include <strings.h>

#include <algorithm>
#include <array>
#include <span>
#include <vector>

#include "protocol/command_kind_table.h"

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
constexpr CommandTraits kSpelledAs(CommandTraits t, LegacySpelling s) {
  t.spelling = s;
  return t;
}
constexpr CommandTraits kDdl{.mirror = M::Write, .ddl = true};
constexpr CommandTraits kCreatesCollection{
    .mirror = M::Write, .ddl = true, .collation_source = DefaultCollationSource::Create};
constexpr CommandTraits kDdlEveryShard{.mirror = M::Write, .ddl = true, .collection_wide = true};
constexpr CommandTraits kEveryShard{.collection_wide = true};
constexpr CommandTraits kEndsTransaction(K kind) { return {.kind = kind, .mirror = M::Transaction}; }
constexpr CommandTraits kNamesNoCollection{.first_value_not_collection = true};

constexpr CommandTraits with(CommandTraits t, bool never_faulted, bool first_value_not_collection) {
  t.never_faulted = never_faulted;
  t.first_value_not_collection = first_value_not_collection;
  return t;
}

constexpr std::array kTable = {
    Entry{"hello", kHello},
    Entry{"isMaster", kHello},
    Entry{"ismaster", kSpelledAs(kHello, LegacySpelling::IsMaster)},
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
    Entry{"findandmodify", kSpelledAs(kWrite(K::FindAndModify), LegacySpelling::FindAndModify)},
    Entry{"bulkWrite", kWrite(K::BulkWrite)},
    Entry{"getMore", kCursor(K::GetMore)},
    Entry{"killCursors", kCursor(K::KillCursors)},
    Entry{"explain", CommandTraits{.kind = K::Explain}},
    Entry{"create", kCreatesCollection},
    Entry{"listCollections", CommandTraits{.collation_source = DefaultCollationSource::ListCollections}},
    Entry{"renameCollection", with(kDdl, false, true)},
    Entry{"dropDatabase", kDdl},
    Entry{"drop", kDdlEveryShard},
    Entry{"createIndexes", kDdlEveryShard},
    Entry{"dropIndexes", kDdlEveryShard},
    Entry{"collMod", kDdlEveryShard},
    Entry{"validate", kEveryShard},
    Entry{"collStats", kEveryShard},
    Entry{"reIndex", kEveryShard},
    Entry{"commitTransaction", kEndsTransaction(K::CommitTransaction)},
    Entry{"abortTransaction", kEndsTransaction(K::AbortTransaction)},
    Entry{"shardCollection", kNamesNoCollection},
    Entry{"reshardCollection", kNamesNoCollection},
    Entry{"analyzeShardKey", kNamesNoCollection},
    Entry{"configureQueryAnalyzer", kNamesNoCollection},
    Entry{"mapreduce.shardedfinish", kNamesNoCollection},
};

// The table's entries grouped by name length (in table order within a length), so a lookup
// compares only the few names as long as the one sent: a scan of the whole table was ~300
// instructions per request (issue 29).
constexpr size_t kLongestName = [] {
  size_t longest = 0;
  for (const auto& e : kTable) longest = std::max(longest, e.name.size());
  return longest;
}();

struct ByLength {
  std::array<uint8_t, kTable.size()> entries{};     // indexes into kTable
  std::array<uint8_t, kLongestName + 2> first{};    // names of length n: entries[first[n], first[n + 1])
};

constexpr ByLength kByLength = [] {
  ByLength b;
  size_t at = 0;
  for (size_t n = 0; n <= kLongestName; ++n) {
    b.first[n] = static_cast<uint8_t>(at);
    for (size_t i = 0; i < kTable.size(); ++i)
      if (kTable[i].name.size() == n) b.entries[at++] = static_cast<uint8_t>(i);
  }
  b.first[kLongestName + 1] = static_cast<uint8_t>(at);
  return b;
}();
static_assert(kTable.size() <= UINT8_MAX, "entries are indexed with uint8_t");

// The table entries whose names are as long as `name` (none when it is longer than them all).
std::span<const uint8_t> sameLength(std::string_view name) {
  if (name.size() > kLongestName) return {};
  const size_t from = kByLength.first[name.size()], to = kByLength.first[name.size() + 1];
  return std::span<const uint8_t>(kByLength.entries).subspan(from, to - from);
}

// `a` and `b` of the same length hold the same bytes. Inline: names are a few bytes long, and a
// call to memcmp cost more than the comparison.
bool sameBytes(std::string_view a, std::string_view b) {
  for (size_t i = 0; i < a.size(); ++i)
    if (a[i] != b[i]) return false;
  return true;
}

}  // namespace

CommandTraits classifyCommand(std::string_view name) {
  const auto candidates = sameLength(name);
  for (uint8_t i : candidates)
    if (sameBytes(kTable[i].name, name)) return kTable[i].traits;
  // Never captured, whatever the case it is spelled in (the server would refuse it anyway).
  for (uint8_t i : candidates)
    if (kTable[i].traits.carries_secrets && strncasecmp(kTable[i].name.data(), name.data(), name.size()) == 0)
      return CommandTraits{.carries_secrets = true};
  return {};
}

bool isListedCommand(std::string_view name) {
  for (uint8_t i : sameLength(name))
    if (sameBytes(kTable[i].name, name)) return true;
  return false;
}

std::vector<std::string_view> commandTableNames() {
  std::vector<std::string_view> names;
  for (const auto& e : kTable) names.push_back(e.name);
  return names;
}

CommandTraits classifyCommandByScan(std::string_view name) {
  for (const auto& e : kTable)
    if (e.name == name) return e.traits;
  for (const auto& e : kTable)
    if (e.traits.carries_secrets && e.name.size() == name.size() &&
        strncasecmp(e.name.data(), name.data(), name.size()) == 0)
      return CommandTraits{.carries_secrets = true};
  return {};
}

std::string_view filedName(const CommandTraits& traits, std::string_view name) {
  switch (traits.spelling) {
    case LegacySpelling::IsMaster: return "isMaster";
    case LegacySpelling::FindAndModify: return "findAndModify";
    case LegacySpelling::None: break;
  }
  return name;
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
    case K::CommitTransaction: return "commitTransaction";
    case K::AbortTransaction: return "abortTransaction";
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
