#include "proxy/mongos_pool.h"

#include <algorithm>

#include "common/json_writer.h"

namespace shardscope::proxy {

const char* stateName(MongosPool::State s) {
  switch (s) {
    case MongosPool::State::Up: return "up";
    case MongosPool::State::Down: return "down";
    default: return "unknown";
  }
}

namespace {

MongosPool::Endpoint endpointOf(const std::string& address) {
  MongosPool::Endpoint e;
  const auto colon = address.rfind(':');
  e.name = address.substr(0, colon);
  if (colon != std::string::npos) e.port = static_cast<uint16_t>(std::stoi(address.substr(colon + 1)));
  return e;
}

std::vector<MongosPool::Endpoint> endpointsOf(std::initializer_list<const char*> addresses) {
  std::vector<MongosPool::Endpoint> out;
  for (const auto& a : addresses) out.push_back(endpointOf(a));
  return out;
}

}  // namespace

MongosPool::MongosPool(std::initializer_list<const char*> addresses, Options options)
    : MongosPool(endpointsOf(addresses), options) {}

MongosPool::MongosPool(const std::vector<Endpoint>& endpoints, Options options)
    : options_(options), random_(std::random_device{}()) {
  for (const auto& e : endpoints) {
    Host h;
    h.view.address = e.address();
    h.endpoint = e;
    hosts_.push_back(std::move(h));
  }
}

size_t MongosPool::size() const {
  std::lock_guard lock(mutex_);
  return hosts_.size();
}

std::string MongosPool::address(size_t i) const {
  std::lock_guard lock(mutex_);
  return hosts_[i].view.address;
}

MongosPool::Endpoint MongosPool::endpoint(size_t i) const {
  std::lock_guard lock(mutex_);
  return hosts_[i].endpoint;
}

MongosPool::State MongosPool::state(size_t i) const {
  std::lock_guard lock(mutex_);
  return hosts_[i].view.state;
}

std::vector<MongosPool::Endpoint> MongosPool::endpoints() const {
  std::lock_guard lock(mutex_);
  std::vector<Endpoint> out;
  for (const auto& h : hosts_)
    if (!h.retired) out.push_back(h.endpoint);
  return out;
}

bool MongosPool::setHosts(const std::vector<Endpoint>& current) {
  std::lock_guard lock(mutex_);
  bool changed = false;
  for (auto& h : hosts_) {
    const bool listed = std::find(current.begin(), current.end(), h.endpoint) != current.end();
    if (h.retired == listed) {
      changed = true;
      h.retired = !listed;
      if (listed) {  // back after a rescan dropped it: nothing it knew is current
        h.view.state = State::Unknown;
        h.probe_at = {};
      }
    }
  }
  for (const auto& e : current) {
    if (std::any_of(hosts_.begin(), hosts_.end(), [&](const Host& h) { return h.endpoint == e; })) continue;
    Host h;
    h.view.address = e.address();
    h.endpoint = e;
    hosts_.push_back(std::move(h));
    changed = true;
  }
  return changed;
}

std::chrono::milliseconds MongosPool::backoffFor(uint32_t failures) const {
  auto d = options_.backoff_initial;
  for (uint32_t i = 1; i < failures && d < options_.backoff_max; ++i) d *= 2;
  return std::min(d, options_.backoff_max);
}

std::vector<size_t> MongosPool::connectOrder(Clock::time_point now) {
  (void)now;
  std::lock_guard lock(mutex_);
  std::vector<size_t> up, unknown, down;
  for (size_t i = 0; i < hosts_.size(); ++i) {
    if (hosts_[i].retired) continue;
    switch (hosts_[i].view.state) {
      case State::Up: up.push_back(i); break;
      case State::Unknown: unknown.push_back(i); break;
      case State::Down: down.push_back(i); break;
    }
  }
  std::stable_sort(up.begin(), up.end(), [&](size_t a, size_t b) { return hosts_[a].view.rtt < hosts_[b].view.rtt; });
  std::vector<size_t> order;
  if (!up.empty()) {
    const auto limit = hosts_[up.front()].view.rtt + options_.local_threshold;
    size_t window = 0;
    while (window < up.size() && hosts_[up[window]].view.rtt <= limit) ++window;
    const size_t first = std::uniform_int_distribution<size_t>(0, window - 1)(random_);
    for (size_t k = 0; k < window; ++k) order.push_back(up[(first + k) % window]);
    order.insert(order.end(), up.begin() + static_cast<std::ptrdiff_t>(window), up.end());
  }
  order.insert(order.end(), unknown.begin(), unknown.end());
  std::stable_sort(down.begin(), down.end(), [&](size_t a, size_t b) { return hosts_[a].retry_at < hosts_[b].retry_at; });
  order.insert(order.end(), down.begin(), down.end());
  return order;
}

void MongosPool::recordSuccess(size_t i, std::chrono::microseconds rtt) {
  std::lock_guard lock(mutex_);
  auto& h = hosts_[i];
  // Smoothed as drivers do (weight 0.2 for the new sample); the first sample is taken as is.
  h.view.rtt = h.view.state == State::Up && h.view.rtt.count() ? (h.view.rtt * 4 + rtt) / 5 : rtt;
  h.view.state = State::Up;
  h.view.consecutive_failures = 0;
  ++h.view.connects;
  h.probing = false;
  h.probe_at = Clock::now() + options_.probe_interval;
}

void MongosPool::recordFailure(size_t i, const std::string& reason, Clock::time_point now) {
  std::lock_guard lock(mutex_);
  auto& h = hosts_[i];
  h.view.state = State::Down;
  h.view.last_error = reason;
  ++h.view.consecutive_failures;
  ++h.view.failures;
  h.retry_at = now + backoffFor(h.view.consecutive_failures);
  h.probe_at = h.retry_at;
  h.probing = false;
}

std::vector<size_t> MongosPool::dueForProbe(Clock::time_point now) {
  std::lock_guard lock(mutex_);
  std::vector<size_t> due;
  for (size_t i = 0; i < hosts_.size(); ++i) {
    auto& h = hosts_[i];
    if (h.retired || h.probing || h.probe_at > now) continue;
    h.probing = true;
    due.push_back(i);
  }
  return due;
}

MongosPool::Clock::time_point MongosPool::nextProbeAt() const {
  std::lock_guard lock(mutex_);
  auto next = Clock::now() + options_.probe_interval;
  for (const auto& h : hosts_)
    if (!h.probing && !h.retired) next = std::min(next, h.probe_at);
  return next;
}

bool MongosPool::anyUp() const {
  std::lock_guard lock(mutex_);
  return std::any_of(hosts_.begin(), hosts_.end(), [](const Host& h) { return !h.retired && h.view.state == State::Up; });
}

std::vector<MongosPool::HostView> MongosPool::snapshot() const {
  std::lock_guard lock(mutex_);
  std::vector<HostView> out;
  for (const auto& h : hosts_)
    if (!h.retired) out.push_back(h.view);
  return out;
}

std::string MongosPool::summary() const {
  std::string up, down, unknown;
  for (const auto& h : snapshot()) {
    if (h.state == State::Up) up += (up.empty() ? "" : ", ") + h.address;
    else if (h.state == State::Down) down += (down.empty() ? "" : ", ") + h.address + " (" + h.last_error + ")";
    else unknown += (unknown.empty() ? "" : ", ") + h.address;
  }
  std::string s = "mongos up: " + (up.empty() ? std::string("none") : up);
  if (!down.empty()) s += "; down: " + down;
  if (!unknown.empty()) s += "; not tried yet: " + unknown;
  return s;
}

std::string MongosPool::renderJson() const {
  std::string out;
  common::JsonWriter w(out);
  w.beginObject().key("hosts").beginArray();
  for (const auto& h : snapshot()) {
    w.beginObject().field("address", std::string_view(h.address)).field("state", std::string_view(stateName(h.state)));
    w.field("rttMs", static_cast<double>(h.rtt.count()) / 1000.0);
    w.field("connects", h.connects).field("failures", h.failures).field("consecutiveFailures", h.consecutive_failures);
    w.field("lastError", std::string_view(h.last_error)).endObject();
  }
  w.endArray().endObject();
  return out;
}

}  // namespace shardscope::proxy
