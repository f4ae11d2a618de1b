// The one table of command names. Names are matched exactly as sent (the server is
// case-sensitive except for the legacy "ismaster" spelling, listed on its own).
#include "protocol/command_kind.h"

#include <array>

namespace shardscope::protocol {
namespace {

struct Entry {
  std::string_view name;
  CommandTraits traits;
};

using K = CommandKind;
constexpr CommandTraits kHello{K::Hello, true, false, false, false};
constexpr CommandTraits kAuth{K::Auth, true, false, false, false};
constexpr CommandTraits kSecret{K::Other, true, false, false, false};  // carries credentials

constexpr std::array kTable = {
    Entry{"hello", kHello},
    Entry{"isMaster", kHello},
    Entry{"ismaster", kHello},
    Entry{"saslStart", kAuth},
    Entry{"saslContinue", kAuth},
    Entry{"authenticate", kAuth},
    Entry{"getnonce", kAuth},
    Entry{"copydbSaslStart", kAuth},
    Entry{"copydbgetnonce", kAuth},
    Entry{"createUser", kSecret},
    Entry{"updateUser", kSecret},
    Entry{"copydb", kSecret},
    Entry{"find", {K::Find, false, true, false, false}},
    Entry{"aggregate", {K::Aggregate, false, true, false, false}},
    Entry{"count", {K::Count, false, true, false, false}},
    Entry{"distinct", {K::Distinct, false, true, false, false}},
    Entry{"insert", {K::Insert, false, false, true, false}},
    Entry{"update", {K::Update, false, false, true, false}},
    Entry{"delete", {K::Delete, false, false, true, false}},
    Entry{"findAndModify", {K::FindAndModify, false, false, true, false}},
    Entry{"bulkWrite", {K::BulkWrite, false, false, true, false}},
    Entry{"getMore", {K::GetMore, false, false, false, true}},
    Entry{"killCursors", {K::KillCursors, false, false, false, true}},
};

}  // namespace

CommandTraits classifyCommand(std::string_view name) {
  for (const auto& e : kTable)
    if (e.name == name) return e.traits;
  // findandmodify is accepted by the server in lower case too.
  if (name == "findandmodify") return {K::FindAndModify, false, false, true, false};
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
    case K::Other: break;
  }
  return "other";
}

}  // namespace shardscope::protocol
