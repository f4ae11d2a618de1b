// Keeps a mongodb+srv:// upstream's mongos pool in step with DNS: the SRV records are read again
// after max(their lowest TTL, upstream_dns.rescan_min_ms); hosts that appear join the pool, hosts
// that vanish retire (their open connections stay). A failed look-up or one with no usable host
// keeps the current list, as drivers do. Its own thread: libresolv look-ups block.
#pragma once
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <string>
#include <thread>

#include "proxy/dns_query.h"
#include "proxy/mongos_pool.h"
#include "proxy/upstream_target.h"

namespace shardscope::proxy {

class SrvRescan {
 public:
  SrvRescan(UpstreamTarget target, DnsServer server, MongosPool& pool, std::chrono::milliseconds minInterval,
            std::chrono::seconds firstTtl);
  ~SrvRescan();  // stops and joins
  SrvRescan(const SrvRescan&) = delete;
  SrvRescan& operator=(const SrvRescan&) = delete;

  // {"name":"_mongodb._tcp...","rescans":N,"failures":N,"lastError":"..."} for /stats.
  std::string renderJson() const;

 private:
  void run(std::chrono::seconds ttl);

  const UpstreamTarget target_;
  const DnsServer server_;
  MongosPool& pool_;
  const std::chrono::milliseconds min_interval_;
  mutable std::mutex mutex_;
  std::condition_variable wake_;
  bool stopping_ = false;
  uint64_t rescans_ = 0, failures_ = 0;
  std::string last_error_;
  std::thread thread_;
};

}  // namespace shardscope::proxy
