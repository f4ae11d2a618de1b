// A migration plan for the recommended key (issue 16 item 10): the command that puts it in force
// (shardCollection for an unsharded collection, refineCollectionShardKey when it only adds suffix
// fields to the current key, reshardCollection otherwise), the index it needs, the initial split
// (split points from the observed distribution of the full key when field values may be shown,
// the hashed initial chunks otherwise), what resharding will need (storage, oplog window, the
// observed write rate, the 5.0 caveat) and the targeted share of the traffic expected after.
#pragma once
#include <string>
#include <vector>

namespace shardscope::common {
class JsonWriter;
}

namespace shardscope::evaluation {

class NamespaceState;
struct NamespaceReport;

struct MigrationPlan {
  bool present = false;  // false: nothing recommended yet
  std::string ns, key_json;
  std::string action;  // "keep" (the winner is in force), "shardCollection", "refineCollectionShardKey", "reshardCollection"
  std::string command_json;  // the admin command, ready to run
  std::string index_json;    // createIndexes command for the supporting index ("" when the action builds it)
  std::string index_note;

  // Initial split: "splitPoints" (values, from the observed full key), "hashed" (initial chunks),
  // "valuesNeeded" (ranged key, evaluation.allow_values off), "none" (resharding splits itself).
  std::string presplit;
  std::vector<std::string> split_points_json;  // full-key documents, ascending
  uint32_t initial_chunks = 0;
  std::string presplit_note;

  // Resharding inputs from the observation.
  double observed_seconds = 0;        // span of the sampled inserts
  double writes_per_second = 0;       // inserts + updates + deletes
  double inserted_bytes_per_second = 0;
  double avg_doc_bytes = 0;
  std::vector<std::string> requirements;  // what to check before running the command

  double targeted_share_after = 0;   // the winner's targeted share of the observed reads and writes
  bool targeted_known = false;       // any read or write observed (else the share above is unknown)
  double targeted_share_now = -1;    // the current key's (-1: the collection is not sharded)
};

MigrationPlan planMigration(const NamespaceState& state, const NamespaceReport& report, bool allow_values);

// {"action": ..., "command": {...}, ...} as the value of the namespace's "migrationPlan" key.
void writeMigrationPlanJson(common::JsonWriter& w, const MigrationPlan& plan);
// The plan as text (a few lines, the commands as mongosh would run them); "" without a plan.
std::string migrationPlanText(const MigrationPlan& plan);

}  // namespace shardscope::evaluation
