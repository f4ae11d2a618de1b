// The projection stages ($project, $unset, $addFields, $set) an aggregate's leading stages pass
// before a $match. The optimiser moves each filter of that $match that does not read a field those
// stages compute or remove to before them (MongoDB manual, Aggregation Pipeline Optimization,
// "($project or $unset or $addFields or $set) + $match Sequence Optimization"), and mongos targets
// by the moved filters. Views into the command; no allocation.
#pragma once
#include <bson/bson.h>

#include <cstddef>
#include <string_view>

namespace shardscope::routing {

class ProjectionsPassed {
 public:
  static bool isProjectionStage(const char* stage_name);

  // Records one stage (`spec` is the stage's value). False when it cannot be followed (a malformed
  // or very wide spec, too many stages): the caller stops looking for $match filters there, which
  // only ever widens the shard set.
  bool add(const char* stage_name, const bson_iter_t& spec);
  bool empty() const { return count_ == 0; }

  // True when every recorded stage passes `path` through unchanged, so a filter on it can move
  // before them. A path a stage sets, unsets, computes, excludes or (inclusion $project) leaves
  // out, or a path above or below one of those, is not passed through.
  bool preserves(std::string_view path) const;

 private:
  enum class Kind { Set, Unset, Include, Exclude };
  struct Stage {
    Kind kind;
    const uint8_t* data;  // the spec: a document, or for $unset a document, array or one string
    uint32_t len;
    bool single_path;     // $unset: "field"
    bool keeps_id;        // inclusion $project: _id kept (not named, or named with a true value)
  };
  static constexpr size_t kMaxStages = 16;
  static constexpr size_t kMaxSpecFields = 32;

  bool stagePreserves(const Stage& s, std::string_view path) const;

  Stage stages_[kMaxStages];
  size_t count_ = 0;
};

}  // namespace shardscope::routing
