// Writes into a rule's collection that the sidecar does not plan statement by statement: a
// bulkWrite (its operations name namespaces by index into nsInfo), an aggregate ending in $out
// or $merge (it writes into another collection than the one it reads), a renameCollection onto it
// (another collection's documents take its place) and a mapReduce writing its output there. Each
// can split any order between customers, so every value of the target's rule is unsettled
// (LookupIndex::unsettleAll).
#pragma once
#include <string>
#include <vector>

#include "protocol/command_kind.h"
#include "protocol/command_view.h"

namespace shardscope::rewrite {

// The "db.coll" namespaces such a command writes into; empty for every other command.
std::vector<std::string> unplannedWriteTargets(const protocol::CommandView& view, protocol::CommandKind kind);

}  // namespace shardscope::rewrite
