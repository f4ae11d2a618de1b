#include "proxy/srv_rescan.h"

#include <spdlog/spdlog.h>

#include "proxy/srv_seedlist.h"
#include "common/json_writer.h"

namespace shardscope::proxy {

SrvRescan::SrvRescan(UpstreamTarget target, DnsServer server, MongosPool& pool, std::chrono::milliseconds minInterval,
                     std::chrono::seconds firstTtl)
    : target_(std::move(target)), server_(std::move(server)), pool_(pool), min_interval_(minInterval) {
  thread_ = std::thread([this, firstTtl] { run(firstTtl); });
}

SrvRescan::~SrvRescan() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  wake_.notify_all();
  thread_.join();
}

void SrvRescan::run(std::chrono::seconds ttl) {
  const std::string name = srvQueryName(target_.srv_host, target_.srv_service_name);
  std::string lastError;
  for (;;) {
    {
      std::unique_lock lock(mutex_);
      const auto wait = std::max<std::chrono::milliseconds>(ttl, min_interval_);
      if (wake_.wait_for(lock, wait, [this] { return stopping_; })) return;
    }
    std::string error;
    auto list = rescanSrvSeedlist(target_, server_, pool_.endpoints(), error);
    {
      std::lock_guard lock(mutex_);
      ++rescans_;
      if (!list) ++failures_;
      last_error_ = error;
    }
    if (!list) {
      if (error != lastError) spdlog::warn("upstream SRV rescan of {}: {}; keeping the current mongos", name, error);
      lastError = error;
      continue;
    }
    lastError.clear();
    ttl = list->ttl;
    if (pool_.setHosts(list->hosts)) {
      std::string hosts;
      for (const auto& h : list->hosts) hosts += (hosts.empty() ? "" : ", ") + h.address();
      spdlog::info("upstream SRV rescan of {}: mongos now {}", name, hosts);
    }
  }
}

std::string SrvRescan::renderJson() const {
  std::lock_guard lock(mutex_);
  std::string out;
  common::JsonWriter w(out);
  const std::string name = srvQueryName(target_.srv_host, target_.srv_service_name);
  w.beginObject().field("name", std::string_view(name)).field("rescans", rescans_).field("failures", failures_);
  w.field("lastError", std::string_view(last_error_)).endObject();
  return out;
}

}  // namespace shardscope::proxy
