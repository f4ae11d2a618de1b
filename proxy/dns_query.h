// DNS look-ups for mongodb+srv:// seed lists (SRV, TXT, and A/AAAA for their targets) through
// libresolv: the system's resolver configuration, or one DNS server named in the configuration
// (upstream_dns.server) when the cluster's names are not in the system's DNS (and in tests).
// Blocking: call from a thread that may wait (start-up, the SRV rescan thread).
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace shardscope::proxy {

struct DnsServer {
  std::string ip;  // IPv4 literal; empty: the system resolver (/etc/resolv.conf)
  uint16_t port = 53;
  // "127.0.0.1:5353" or "10.0.0.2" (port 53). Empty optional and `error` when malformed.
  static std::optional<DnsServer> parse(const std::string& text, std::string& error);
};

struct SrvRecord {
  std::string target;  // without the trailing dot
  uint16_t port = 0;
  uint32_t ttl = 0;
};

// How a look-up ended: records found, the name has none of that type (NXDOMAIN or no data), or
// the resolver failed (timeout, server failure, refused) with `error` saying why.
enum class DnsStatus { Found, NoRecords, Failed };

struct DnsResult {
  DnsStatus status = DnsStatus::Failed;
  std::string error;
  std::vector<SrvRecord> srv;       // SRV look-ups
  std::vector<std::string> txt;     // TXT look-ups: one entry per record, its strings concatenated
  std::vector<std::string> addresses;  // A/AAAA look-ups: numeric addresses
};

DnsResult querySrv(const std::string& name, const DnsServer& server);
DnsResult queryTxt(const std::string& name, const DnsServer& server);
// A records, else AAAA records.
DnsResult queryAddresses(const std::string& name, const DnsServer& server);

}  // namespace shardscope::proxy
