// What routing discovery did last, for /stats ("discovery"), /metrics (shardscope_routing_*) and
// the /readyz reason. Written by the discovery thread, read by the admin threads.
#pragma once
#include <chrono>
#include <cstdint>
#include <map>
#include <mutex>
#include <string>

namespace shardscope::cluster {

class DiscoveryStatus {
 public:
  struct Refresh {
    const char* kind = "full";  // "full" (first or after a failure), "incremental", "namespaces"
    uint64_t chunk_documents_read = 0;
    uint64_t collections_read_fully = 0;
    uint64_t collections = 0, chunks = 0;
    std::map<std::string, std::string> versions;  // ns -> collection version
  };
  void onSuccess(Refresh r);
  void onFailure(const std::string& error, std::chrono::milliseconds retry_in);
  void onStaleRequest();

  std::string renderJson() const;       // the /stats section
  void appendMetrics(std::string& out) const;  // Prometheus text
  std::string readinessLine() const;    // "routing discovery: ..."
  uint64_t refreshes() const;
  std::string lastError() const;

 private:
  mutable std::mutex mutex_;
  uint64_t refreshes_ = 0, failures_ = 0, consecutive_failures_ = 0, stale_requests_ = 0;
  uint64_t chunk_documents_read_total_ = 0;
  int64_t last_success_unix_ = 0;  // seconds; 0 = never
  std::chrono::steady_clock::time_point last_success_, last_failure_, next_retry_;
  std::string last_error_;
  Refresh last_;
};

}  // namespace shardscope::cluster
