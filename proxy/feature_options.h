// The one mapping from the config's sections to the features' option structs, validated as a whole:
// stats -> stats::StatsOptions, evaluation -> evaluation::EvaluationOptions, mirror -> MirrorOptions,
// capture -> CaptureOptions, upstream_pool -> MongosPool::Options. Start-up and reload both call it
// before anything is applied, so a bad value (e.g. an evaluation candidate's key pattern) stops the
// start with exit 2, or refuses the reload with the running config kept; every error names its key.
#pragma once
#include <optional>
#include <string>
#include <vector>

#include "config/config.h"
#include "evaluation/evaluator.h"
#include "proxy/mongos_pool.h"
#include "shadow/capture_writer.h"
#include "shadow/mirror.h"
#include "stats/registry.h"

namespace shardscope::proxy {

struct FeatureOptions {
  stats::StatsOptions stats;
  std::optional<evaluation::EvaluationOptions> evaluation;  // evaluation.enabled
  std::optional<shadow::MirrorOptions> mirror;                      // mirror.upstream set
  std::optional<shadow::CaptureOptions> capture;                    // capture.file set
  MongosPool::Options upstream_pool;
};

// Fills `out`; returns the errors ("evaluation.candidates: 'db.c: {...}': ..."), empty when valid.
std::vector<std::string> featureOptions(const config::Config& config, FeatureOptions& out);

}  // namespace shardscope::proxy
