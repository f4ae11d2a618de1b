#include "cluster/discovery_status.h"

#include "stats/prometheus_writer.h"

#include <algorithm>

#include "common/json_writer.h"

namespace shardscope::cluster {
namespace {

constexpr size_t kMaxVersionsShown = 200;  // /stats stays small with thousands of collections

int64_t secondsSince(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration_cast<std::chrono::seconds>(std::chrono::steady_clock::now() - t).count();
}

}  // namespace

void DiscoveryStatus::onSuccess(Refresh r) {
  std::lock_guard lock(mutex_);
  ++refreshes_;
  consecutive_failures_ = 0;
  chunk_documents_read_total_ += r.chunk_documents_read;
  last_success_ = std::chrono::steady_clock::now();
  last_success_unix_ = std::chrono::duration_cast<std::chrono::seconds>(
                           std::chrono::system_clock::now().time_since_epoch()).count();
  last_error_.clear();
  last_ = std::move(r);
}

void DiscoveryStatus::onFailure(const std::string& error, std::chrono::milliseconds retry_in) {
  std::lock_guard lock(mutex_);
  ++refreshes_;
  ++failures_;
  ++consecutive_failures_;
  last_failure_ = std::chrono::steady_clock::now();
  next_retry_ = last_failure_ + retry_in;
  last_error_ = error;
}

void DiscoveryStatus::onStaleRequest() {
  std::lock_guard lock(mutex_);
  ++stale_requests_;
}

uint64_t DiscoveryStatus::refreshes() const {
  std::lock_guard lock(mutex_);
  return refreshes_;
}

std::string DiscoveryStatus::lastError() const {
  std::lock_guard lock(mutex_);
  return last_error_;
}

std::string DiscoveryStatus::renderJson() const {
  std::lock_guard lock(mutex_);
  std::string out;
  common::JsonWriter w(out);
  w.beginObject().field("refreshes", refreshes_).field("failures", failures_);
  w.field("consecutiveFailures", consecutive_failures_).field("staleRequests", stale_requests_);
  w.key("lastSuccessUnixSeconds");
  if (last_success_unix_) w.value(last_success_unix_);
  else w.null();
  w.key("lastError");
  if (last_error_.empty()) w.null();
  else w.value(std::string_view(last_error_));
  w.field("collections", last_.collections).field("chunks", last_.chunks);
  w.field("chunkDocumentsReadTotal", chunk_documents_read_total_);
  w.key("lastRefresh").beginObject().field("kind", last_.kind).field("chunkDocumentsRead", last_.chunk_documents_read);
  w.field("collectionsReadFully", last_.collections_read_fully).endObject();
  w.key("versions").beginObject();
  size_t shown = 0;
  for (const auto& [ns, version] : last_.versions) {
    if (++shown > kMaxVersionsShown) break;
    w.field(ns, std::string_view(version));
  }
  w.endObject().field("versionsTruncated", last_.versions.size() > kMaxVersionsShown).endObject();
  return out;
}

void DiscoveryStatus::appendMetrics(std::string& out) const {
  std::lock_guard lock(mutex_);
  stats::PrometheusWriter w(out);
  w.single(stats::Metric::routing_refreshes_total, refreshes_);
  w.single(stats::Metric::routing_refresh_failures_total, failures_);
  w.single(stats::Metric::routing_last_refresh_success_timestamp_seconds, static_cast<uint64_t>(last_success_unix_));
  w.single(stats::Metric::routing_chunks, static_cast<uint64_t>(last_.chunks));
}

std::string DiscoveryStatus::readinessLine() const {
  std::lock_guard lock(mutex_);
  std::string line = "routing discovery: ";
  if (last_success_unix_)
    line += std::to_string(last_.collections) + " collections, " + std::to_string(last_.chunks) +
            " chunks, last success " + std::to_string(secondsSince(last_success_)) + "s ago";
  else
    line += "no routing table yet";
  if (consecutive_failures_) {
    auto retry = std::chrono::duration_cast<std::chrono::milliseconds>(next_retry_ - std::chrono::steady_clock::now());
    line += "; " + std::to_string(consecutive_failures_) + " failure(s) in a row, last: " + last_error_ +
            " (retry in " + std::to_string(std::max<int64_t>(0, retry.count())) + " ms)";
  }
  return line;
}

}  // namespace shardscope::cluster
