#include "proxy/srv_seedlist.h"

#include <algorithm>
#include <random>

#include "proxy/upstream_target.h"

namespace shardscope::proxy {
namespace {

std::string lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return s;
}

std::string normalName(const std::string& name) {
  std::string n = lower(name);
  if (!n.empty() && n.back() == '.') n.pop_back();
  return n;
}

bool endsWith(const std::string& s, const std::string& suffix) {
  return s.size() > suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

bool sameKey(const std::string& a, const std::string& b) { return lower(a) == lower(b); }

// "a=1&b=2" (';' also separates, as in the URI syntax) as key/value pairs; false when one has no '='.
bool splitOptions(const std::string& text, UriOptions& out) {
  size_t start = 0;
  while (start <= text.size()) {
    size_t end = text.find_first_of("&;", start);
    if (end == std::string::npos) end = text.size();
    const std::string item = text.substr(start, end - start);
    if (!item.empty()) {
      const auto eq = item.find('=');
      if (eq == std::string::npos || eq == 0) return false;
      out.emplace_back(item.substr(0, eq), item.substr(eq + 1));
    }
    start = end + 1;
  }
  return true;
}

}  // namespace

std::string srvQueryName(const std::string& srvHost, const std::string& serviceName) {
  return "_" + serviceName + "._tcp." + srvHost;
}

bool srvTargetInDomain(const std::string& srvHost, const std::string& target) {
  const std::string host = normalName(srvHost), t = normalName(target);
  if (std::count(host.begin(), host.end(), '.') >= 2) return endsWith(t, host.substr(host.find('.')));
  return endsWith(t, "." + host);
}

bool parseSrvTxt(const std::vector<std::string>& records, UriOptions& options, std::string& error) {
  if (records.empty()) return true;
  if (records.size() > 1) {
    error = std::to_string(records.size()) + " TXT records; at most one is allowed";
    return false;
  }
  UriOptions parsed;
  if (!splitOptions(records.front(), parsed)) {
    error = "TXT record is not a list of key=value options";
    return false;
  }
  for (const auto& [key, value] : parsed) {
    if (!sameKey(key, "authSource") && !sameKey(key, "replicaSet") && !sameKey(key, "loadBalanced")) {
      error = "TXT record sets '" + key + "'; only authSource, replicaSet and loadBalanced may be set there";
      return false;
    }
    if (sameKey(key, "loadBalanced") && value != "true" && value != "false") {
      error = "TXT record: loadBalanced must be true or false";
      return false;
    }
  }
  options = std::move(parsed);
  return true;
}

std::optional<SrvSeedlist> buildSrvSeedlist(const std::string& srvHost, const std::string& serviceName,
                                            const DnsResult& srv, const DnsResult* txt, bool strict, int maxHosts,
                                            const std::vector<MongosPool::Endpoint>& current, std::string& error) {
  const std::string query = srvQueryName(srvHost, serviceName);
  if (srv.status == DnsStatus::Failed) {
    error = "SRV look-up of " + query + " failed: " + srv.error;
    return std::nullopt;
  }
  if (srv.status == DnsStatus::NoRecords || srv.srv.empty()) {
    error = "no SRV records for " + query;
    return std::nullopt;
  }
  SrvSeedlist out;
  uint32_t ttl = UINT32_MAX;
  std::vector<std::string> outside;
  for (const auto& r : srv.srv) {
    if (!srvTargetInDomain(srvHost, r.target)) {
      outside.push_back(r.target);
      continue;
    }
    MongosPool::Endpoint e{normalName(r.target), r.port, {}};
    if (std::find(out.hosts.begin(), out.hosts.end(), e) == out.hosts.end()) out.hosts.push_back(e);
    ttl = std::min(ttl, r.ttl);
  }
  if (!outside.empty() && (strict || out.hosts.empty())) {
    error = "SRV record of " + query + " points to '" + outside.front() + "', outside the domain of " + srvHost +
            " (refused, as drivers do)";
    return std::nullopt;
  }
  out.ttl = std::chrono::seconds(ttl);
  if (txt) {
    if (txt->status == DnsStatus::Failed) {
      error = "TXT look-up of " + srvHost + " failed: " + txt->error;
      return std::nullopt;
    }
    if (!parseSrvTxt(txt->txt, out.txt_options, error)) {
      error = srvHost + ": " + error;
      return std::nullopt;
    }
  }
  if (maxHosts > 0 && out.hosts.size() > static_cast<size_t>(maxHosts)) {
    // Hosts in use first (a rescan does not move connections without need), then a random pick.
    std::vector<MongosPool::Endpoint> kept, rest;
    for (const auto& h : out.hosts) {
      const bool inUse = std::any_of(current.begin(), current.end(), [&](const auto& c) { return c.name == h.name && c.port == h.port; });
      (inUse ? kept : rest).push_back(h);
    }
    std::shuffle(rest.begin(), rest.end(), std::mt19937(std::random_device{}()));
    kept.insert(kept.end(), rest.begin(), rest.end());
    kept.resize(static_cast<size_t>(maxHosts));
    out.hosts = std::move(kept);
  }
  return out;
}

namespace {

// With a named DNS server, each host's address comes from it. False when one has none.
bool resolveAddresses(SrvSeedlist& list, const DnsServer& server, std::string& error) {
  if (server.ip.empty()) return true;
  for (auto& h : list.hosts) {
    DnsResult a = queryAddresses(h.name, server);
    if (a.status != DnsStatus::Found || a.addresses.empty()) {
      error = "no address for SRV target " + h.name + (a.error.empty() ? "" : ": " + a.error);
      return false;
    }
    h.ip = a.addresses.front();
  }
  return true;
}

}  // namespace

std::optional<SrvSeedlist> resolveSrvSeedlist(const UpstreamTarget& target, const DnsServer& server, std::string& error) {
  const DnsResult srv = querySrv(srvQueryName(target.srv_host, target.srv_service_name), server);
  const DnsResult txt = queryTxt(target.srv_host, server);
  auto list = buildSrvSeedlist(target.srv_host, target.srv_service_name, srv, &txt, true, target.srv_max_hosts, {}, error);
  if (list && !resolveAddresses(*list, server, error)) return std::nullopt;
  return list;
}

std::optional<SrvSeedlist> rescanSrvSeedlist(const UpstreamTarget& target, const DnsServer& server,
                                             const std::vector<MongosPool::Endpoint>& current, std::string& error) {
  const DnsResult srv = querySrv(srvQueryName(target.srv_host, target.srv_service_name), server);
  auto list = buildSrvSeedlist(target.srv_host, target.srv_service_name, srv, nullptr, false, target.srv_max_hosts, current, error);
  if (list && !resolveAddresses(*list, server, error)) return std::nullopt;
  return list;
}

std::string seedlistUri(const std::string& srvUri, const std::vector<MongosPool::Endpoint>& hosts, const UriOptions& txt,
                        bool tls) {
  static const std::string scheme = "mongodb+srv://";
  const std::string rest = srvUri.substr(std::min(srvUri.size(), scheme.size()));
  const size_t authorityEnd = std::min(rest.find('/'), rest.find('?'));
  const std::string authority = rest.substr(0, authorityEnd);
  const auto at = authority.rfind('@');
  const std::string userinfo = at == std::string::npos ? "" : authority.substr(0, at + 1);
  std::string path = authorityEnd == std::string::npos ? "" : rest.substr(authorityEnd);
  if (!path.empty() && path.front() == '/') path.erase(0, 1);
  const auto q = path.find('?');
  const std::string database = path.substr(0, q);
  UriOptions options;
  if (q != std::string::npos) splitOptions(path.substr(q + 1), options);
  std::erase_if(options, [](const auto& o) { return sameKey(o.first, "srvServiceName") || sameKey(o.first, "srvMaxHosts"); });
  auto has = [&](const std::string& key) {
    return std::any_of(options.begin(), options.end(), [&](const auto& o) { return sameKey(o.first, key); });
  };
  const bool tlsGiven = has("tls") || has("ssl");
  for (const auto& o : txt)
    if (!has(o.first)) options.push_back(o);
  if (tls && !tlsGiven) options.emplace_back("tls", "true");

  std::string uri = "mongodb://" + userinfo;
  for (size_t i = 0; i < hosts.size(); ++i) {
    const std::string& where = hosts[i].ip.empty() ? hosts[i].name : hosts[i].ip;
    uri += (i ? "," : "") + (where.find(':') != std::string::npos ? "[" + where + "]" : where) + ":" + std::to_string(hosts[i].port);
  }
  uri += "/" + database;
  for (size_t i = 0; i < options.size(); ++i) uri += (i ? "&" : "?") + options[i].first + "=" + options[i].second;
  return uri;
}

}  // namespace shardscope::proxy
