// Live discovery of the routing table: a background thread reads config.shards,
// config.collections and config.chunks through mongos and publishes each new table through a
// callback. Reads are incremental like mongos's catalog cache (routing/catalog_cache.h): after
// the first, only chunks whose version is above the one known. Every interval the whole catalog
// is checked that way; a StaleConfig for a namespace (requestRefresh(ns)) checks that namespace at
// once. A failed read is retried after 0.5 s, doubling up to the interval.
#pragma once
#include <chrono>
#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "cluster/client_factory.h"
#include "cluster/discovery_status.h"
#include "routing/catalog_cache.h"
#include "routing/routing_table.h"

namespace shardscope::cluster {

class RoutingDiscovery {
 public:
  using Publish = std::function<void(std::shared_ptr<const routing::RoutingTable>)>;

  // `status` (may be null) receives each refresh's outcome for the admin endpoint.
  RoutingDiscovery(std::string uri, std::chrono::seconds interval, Publish publish, DiscoveryStatus* status = nullptr);
  ~RoutingDiscovery();  // stops and joins
  RoutingDiscovery(const RoutingDiscovery&) = delete;
  RoutingDiscovery& operator=(const RoutingDiscovery&) = delete;

  void start();
  void stop();
  // Asks for a refresh of `ns` ("db.coll"; a database name or "" = every collection) soon: at
  // most one read per kMinSpacing, requests in between coalesce; more than kMaxPendingNamespaces
  // distinct namespaces turn into one refresh of everything.
  void requestRefresh(std::string_view ns = {});
  // One synchronous read-build-publish; false with `error` set on failure. Used by tests.
  bool refreshOnce(std::string& error);

  std::string lastError() const;
  uint64_t refreshCount() const;

  static constexpr std::chrono::milliseconds kMinSpacing{500};
  static constexpr std::chrono::milliseconds kFirstRetry{500};
  static constexpr size_t kMaxPendingNamespaces = 64;
  static constexpr size_t kMaxNamespaceBytes = 255;  // longer is no namespace: refresh everything

 private:
  void run();
  // Reads what `only` names (empty: the whole catalog) and publishes when anything changed.
  bool refresh(const std::set<std::string>& only, std::string& error);
  bool runReads(mongoc_client_t* c, const std::vector<routing::CatalogCache::Read>& reads,
                DiscoveryStatus::Refresh& report, std::string& error);
  mongoc_client_t* client(std::string& error);

  std::string uri_;
  std::chrono::seconds interval_;
  Publish publish_;
  DiscoveryStatus own_status_;
  DiscoveryStatus* status_;
  routing::CatalogCache cache_;  // discovery thread only
  Client client_;  // discovery thread only: kept between refreshes
  std::vector<routing::OwnedBson> shards_;  // config.shards as last read
  bool published_ = false;
  mutable std::mutex mutex_;
  std::condition_variable wake_;
  bool stopping_ = false;
  bool refresh_all_ = false;
  std::set<std::string> pending_;  // namespaces asked for since the last read
  std::string last_error_;
  uint64_t refreshes_ = 0;
  std::thread thread_;
};

}  // namespace shardscope::cluster
