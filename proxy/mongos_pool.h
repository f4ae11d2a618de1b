// The mongos of the upstream seed list and what the proxy knows of each: up, down (retried after
// an exponential backoff) or not tried yet, the last failure and the connect round trip.
// New client connections go to the healthy hosts within `local_threshold` of the fastest
// (drivers' localThresholdMS), taken in turn; when one fails the next in the order is tried.
// Pure bookkeeping under one mutex: the connecting itself is upstream_connect.h.
#pragma once
#include <chrono>
#include <initializer_list>
#include <cstdint>
#include <mutex>
#include <random>
#include <string>
#include <vector>

namespace shardscope::proxy {

class MongosPool {
 public:
  using Clock = std::chrono::steady_clock;
  struct Options {
    std::chrono::milliseconds local_threshold{15};
    std::chrono::milliseconds probe_interval{5000};
    std::chrono::milliseconds backoff_initial{250};
    std::chrono::milliseconds backoff_max{10000};
  };
  enum class State { Unknown, Up, Down };
  // Where a host is: its name (TLS checks it) and, when the upstream's DNS server is not the
  // system's (upstream_dns.server), the address that server gave for it.
  struct Endpoint {
    std::string name;
    uint16_t port = 27017;
    std::string ip;  // empty: the system resolver resolves `name` at each connect
    std::string address() const { return name + ":" + std::to_string(port); }
    bool operator==(const Endpoint&) const = default;
  };
  struct HostView {
    std::string address;  // host:port
    State state = State::Unknown;
    std::chrono::microseconds rtt{0};  // smoothed connect round trip (0 until the first success)
    std::string last_error;
    uint32_t consecutive_failures = 0;
    uint64_t connects = 0, failures = 0;
  };

  MongosPool(std::initializer_list<const char*> addresses, Options options);  // "host:port" each (tests)
  MongosPool(const std::vector<Endpoint>& endpoints, Options options);

  // Indexes stay valid for the pool's life: a host an SRV rescan drops is retired, not erased.
  size_t size() const;
  std::string address(size_t i) const;
  Endpoint endpoint(size_t i) const;
  State state(size_t i) const;
  std::vector<Endpoint> endpoints() const;  // the hosts in use (not retired)

  // The seed list an SRV rescan found: hosts no longer listed retire (no new connection, no probe,
  // not shown; connections open to them stay), listed ones come back or are added, not tried yet.
  // True when the set changed.
  bool setHosts(const std::vector<Endpoint>& current);

  // Every host, best first: healthy hosts in the latency window (starting at a random one, as
  // drivers pick, so new connections spread; a strict rotation would send every pymongo
  // application connection to the same host, its monitor connection taking the other turn), other healthy hosts by latency, hosts not tried yet in seed order, then
  // down hosts, the one whose retry comes first first (a last resort: they may be back).
  std::vector<size_t> connectOrder(Clock::time_point now = Clock::now());
  void recordSuccess(size_t i, std::chrono::microseconds rtt);
  void recordFailure(size_t i, const std::string& reason, Clock::time_point now = Clock::now());

  // Hosts the background probe should try now (healthy ones every probe_interval, down ones when
  // their backoff ends); each is handed out once until its result is recorded.
  std::vector<size_t> dueForProbe(Clock::time_point now = Clock::now());
  // When the probe should look again at the latest.
  Clock::time_point nextProbeAt() const;

  bool anyUp() const;
  std::vector<HostView> snapshot() const;
  // "mongos up: a:1, b:2; down: c:3 (connection refused)" for /readyz.
  std::string summary() const;
  // {"hosts":[{"address":..,"state":..,"rttMs":..,...}]} for /stats.
  std::string renderJson() const;

 private:
  struct Host {
    HostView view;
    Endpoint endpoint;
    bool retired = false;
    Clock::time_point retry_at{};  // down: not before this
    Clock::time_point probe_at{};  // next background probe
    bool probing = false;
  };
  std::chrono::milliseconds backoffFor(uint32_t failures) const;

  const Options options_;
  mutable std::mutex mutex_;
  std::vector<Host> hosts_;
  std::minstd_rand random_;  // picks the start within the latency window
};

const char* stateName(MongosPool::State s);

}  // namespace shardscope::proxy
