// mongodb+srv:// seed lists, as the drivers' "Initial DNS Seedlist Discovery" specification says:
// the SRV records of `_<srvServiceName>._tcp.<host>` list the mongos, every target must lie in
// the parent domain of <host>, at most one TXT record may add `authSource`, `replicaSet` and
// `loadBalanced` (nothing else), options in the URI win over the TXT record, and TLS is on unless
// the URI says tls=false. The checks are pure functions (unit tested); resolve* do the look-ups.
#pragma once
#include <chrono>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "proxy/dns_query.h"
#include "proxy/mongos_pool.h"

namespace shardscope::proxy {

struct UpstreamTarget;
using UriOptions = std::vector<std::pair<std::string, std::string>>;

struct SrvSeedlist {
  std::vector<MongosPool::Endpoint> hosts;
  UriOptions txt_options;     // from the TXT record (initial resolution only)
  std::chrono::seconds ttl{0};  // the lowest TTL of the SRV records
};

// "_mongodb._tcp.cluster0.example.com".
std::string srvQueryName(const std::string& srvHost, const std::string& serviceName);

// Whether an SRV target may be used for `srvHost`: with three or more labels, the target must end
// with "." + the parent domain (srvHost less its first label); with fewer, it must end with
// "." + srvHost itself (one more level). Case-insensitive; a trailing dot is ignored.
bool srvTargetInDomain(const std::string& srvHost, const std::string& target);

// The TXT records of srvHost as URI options; an error for more than one record, a malformed
// option or any option other than authSource, replicaSet and loadBalanced.
bool parseSrvTxt(const std::vector<std::string>& records, UriOptions& options, std::string& error);

// From the look-up results: `strict` (start-up) refuses a target outside the domain, a rescan
// ignores it. Hosts come in record order; srvMaxHosts > 0 keeps that many, preferring `current`.
std::optional<SrvSeedlist> buildSrvSeedlist(const std::string& srvHost, const std::string& serviceName,
                                            const DnsResult& srv, const DnsResult* txt, bool strict, int maxHosts,
                                            const std::vector<MongosPool::Endpoint>& current, std::string& error);

// Look-ups through `server` (the system resolver when its ip is empty). With a named server, the
// hosts' addresses come from it too (Endpoint::ip), since the system resolver may not know them.
std::optional<SrvSeedlist> resolveSrvSeedlist(const UpstreamTarget& target, const DnsServer& server, std::string& error);
// A rescan: SRV only (the TXT record is read once, as drivers do). Empty when the look-up failed
// or found no usable host: the caller keeps the list it has.
std::optional<SrvSeedlist> rescanSrvSeedlist(const UpstreamTarget& target, const DnsServer& server,
                                             const std::vector<MongosPool::Endpoint>& current, std::string& error);

// The mongodb:// URI for the proxy's own connections (cluster/: discovery, mapping collection):
// `srvUri`'s credentials, database and options with these hosts, the TXT options the URI does not
// set, tls=true unless the URI sets tls/ssl, and without the SRV-only options.
std::string seedlistUri(const std::string& srvUri, const std::vector<MongosPool::Endpoint>& hosts, const UriOptions& txt,
                        bool tls);

}  // namespace shardscope::proxy
