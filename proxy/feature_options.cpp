#include "proxy/feature_options.h"

#include "routing/shard_key_pattern.h"

namespace shardscope::proxy {
namespace {

// "db.coll: {field: 1, ...}" -> (ns, key pattern JSON), the pattern parsed as MongoDB would take it.
bool parseCandidate(const std::string& spec, std::pair<std::string, std::string>& out, std::string& error) {
  auto colon = spec.find(':');
  if (colon == std::string::npos || spec.find('{') < colon) {
    error = "expected 'db.coll: {field: 1, ...}', got '" + spec + "'";
    return false;
  }
  std::string ns = spec.substr(0, colon);
  ns.erase(0, ns.find_first_not_of(" "));
  ns.erase(ns.find_last_not_of(" ") + 1);
  if (ns.find('.') == std::string::npos || ns.front() == '.' || ns.back() == '.') {
    error = "'" + spec + "': the namespace must be db.collection";
    return false;
  }
  std::string keyError;
  if (!routing::ShardKeyPattern::fromJson(spec.substr(colon + 1), keyError)) {
    error = ns + ": " + keyError;
    return false;
  }
  out = {ns, spec.substr(colon + 1)};
  return true;
}

}  // namespace

std::vector<std::string> featureOptions(const config::Config& c, FeatureOptions& out) {
  std::vector<std::string> errors;
  out.stats = stats::StatsOptions{c.stats_record_values, c.stats_max_shapes_per_namespace};

  out.evaluation.reset();
  if (c.evaluation_enabled) {
    evaluation::EvaluationOptions e;
    e.simulated_shards = c.evaluation_simulated_shards;
    e.allow_values = c.evaluation_allow_values;
    e.max_memory_bytes = c.evaluation_max_memory_bytes;
    e.max_namespace_bytes = c.evaluation_max_namespace_bytes;
    for (const auto& spec : c.evaluation_candidates) {
      std::pair<std::string, std::string> candidate;
      std::string error;
      if (parseCandidate(spec, candidate, error)) e.configured_candidates.push_back(std::move(candidate));
      else errors.push_back("evaluation.candidates: " + error);
    }
    out.evaluation = std::move(e);
  }

  out.mirror.reset();
  if (!c.mirror.upstream.empty()) {
    shadow::MirrorOptions m;
    m.upstream = c.mirror.upstream;
    m.mode = c.mirror.mode == "all" ? shadow::MirrorOptions::Mode::All : shadow::MirrorOptions::Mode::Reads;
    m.sample_rate = c.mirror.sample_rate;
    m.namespaces = c.mirror.namespaces;
    m.queue_size = c.mirror.queue_size;
    m.queue_bytes = c.mirror.queue_bytes;
    m.workers = c.mirror.workers;
    m.timeout_ms = c.mirror.timeout_ms;
    m.routing_file = c.mirror.routing_file;
    m.record_values = c.mirror.record_values;
    m.use_cluster_auth = c.mirror.use_cluster_auth;
    out.mirror = std::move(m);
  }

  out.capture.reset();
  if (!c.capture.file.empty()) {
    shadow::CaptureOptions k;
    k.file = c.capture.file;
    k.mode = c.capture.mode == "full" ? shadow::CaptureMode::Full : shadow::CaptureMode::Redacted;
    k.max_bytes = c.capture.max_bytes;
    k.rotate_bytes = c.capture.rotate_bytes;
    k.queue_bytes = c.capture.queue_bytes;
    out.capture = std::move(k);
  }

  out.upstream_pool.local_threshold = std::chrono::milliseconds(c.upstream_pool.local_threshold_ms);
  out.upstream_pool.probe_interval = std::chrono::milliseconds(c.upstream_pool.probe_interval_ms);
  out.upstream_pool.backoff_max = std::chrono::milliseconds(c.upstream_pool.backoff_max_ms);
  return errors;
}

}  // namespace shardscope::proxy
