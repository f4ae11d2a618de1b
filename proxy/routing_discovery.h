// Live discovery of the routing table: a background thread reads config.shards,
// config.collections and config.chunks through mongos every interval (and soon after
// requestRefresh(), e.g. on StaleConfig) and publishes each new table through a callback.
#pragma once
#include <chrono>
#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "routing/routing_table.h"

namespace shardscope::proxy {

class RoutingDiscovery {
 public:
  using Publish = std::function<void(std::shared_ptr<const routing::RoutingTable>)>;

  RoutingDiscovery(std::string uri, std::chrono::seconds interval, Publish publish);
  ~RoutingDiscovery();  // stops and joins
  RoutingDiscovery(const RoutingDiscovery&) = delete;
  RoutingDiscovery& operator=(const RoutingDiscovery&) = delete;

  void start();
  void stop();
  // Asks for a refresh soon; bursts (a StaleConfig storm) coalesce into one read, at most one
  // read per second.
  void requestRefresh();
  // One synchronous read-build-publish; false with `error` set on failure. Used by tests.
  bool refreshOnce(std::string& error);

  std::string lastError() const;
  uint64_t refreshCount() const;

 private:
  void run();

  std::string uri_;
  std::chrono::seconds interval_;
  Publish publish_;
  mutable std::mutex mutex_;
  std::condition_variable wake_;
  bool stopping_ = false;
  bool refresh_requested_ = false;
  std::string last_error_;
  uint64_t refreshes_ = 0;
  std::thread thread_;
};

}  // namespace shardscope::proxy
