#include "proxy/dns_query.h"

#include <arpa/inet.h>
#include <arpa/nameser.h>
#include <netinet/in.h>
#include <resolv.h>

#include <charconv>
#include <cstring>

namespace shardscope::proxy {

std::optional<DnsServer> DnsServer::parse(const std::string& text, std::string& error) {
  DnsServer s;
  const auto colon = text.find(':');
  s.ip = text.substr(0, colon);
  in_addr v4{};
  if (inet_pton(AF_INET, s.ip.c_str(), &v4) != 1) {
    error = "upstream_dns.server: '" + text + "' is not an IPv4 address[:port]";
    return std::nullopt;
  }
  if (colon != std::string::npos) {
    const std::string port = text.substr(colon + 1);
    unsigned value = 0;
    auto [end, ec] = std::from_chars(port.data(), port.data() + port.size(), value);
    if (ec != std::errc() || end != port.data() + port.size() || value == 0 || value > 65535) {
      error = "upstream_dns.server: bad port in '" + text + "'";
      return std::nullopt;
    }
    s.port = static_cast<uint16_t>(value);
  }
  return s;
}

namespace {

// One resolver state per look-up: res_n* calls are thread-safe with their own state, and a fresh
// state reads /etc/resolv.conf again (a changed DNS server is picked up by the next rescan).
class Resolver {
 public:
  explicit Resolver(const DnsServer& server) {
    std::memset(&state_, 0, sizeof state_);
    ok_ = res_ninit(&state_) == 0;
    if (!ok_ || server.ip.empty()) return;
    state_.options &= ~static_cast<unsigned long>(RES_DNSRCH | RES_DEFNAMES);  // names are complete
    state_.nscount = 1;
    state_.nsaddr_list[0].sin_family = AF_INET;
    inet_pton(AF_INET, server.ip.c_str(), &state_.nsaddr_list[0].sin_addr);
    state_.nsaddr_list[0].sin_port = htons(server.port);
    state_.retrans = 2;  // seconds per try
    state_.retry = 2;
  }
  ~Resolver() {
    if (ok_) res_nclose(&state_);
  }
  Resolver(const Resolver&) = delete;
  Resolver& operator=(const Resolver&) = delete;

  // Runs the query; on Found, `msg` parses the answer held in `answer_`.
  DnsResult query(const std::string& name, ns_type type, ns_msg& msg) {
    DnsResult r;
    if (!ok_) {
      r.error = "cannot initialise the resolver";
      return r;
    }
    const int n = res_nquery(&state_, name.c_str(), ns_c_in, type, answer_, sizeof answer_);
    if (n < 0) {
      switch (state_.res_h_errno) {
        case HOST_NOT_FOUND:
        case NO_DATA: r.status = DnsStatus::NoRecords; break;
        case TRY_AGAIN: r.error = "no answer from the DNS server (timeout, refused or server failure)"; break;
        default: r.error = "the DNS query failed"; break;
      }
      return r;
    }
    if (ns_initparse(answer_, n, &msg) < 0) {
      r.error = "malformed DNS answer";
      return r;
    }
    r.status = DnsStatus::Found;
    return r;
  }

 private:
  struct __res_state state_;
  unsigned char answer_[65536];
  bool ok_ = false;
};

std::string withoutTrailingDot(std::string name) {
  if (!name.empty() && name.back() == '.') name.pop_back();
  return name;
}

// Calls `each(rr)` for every answer record of `type`; NoRecords when there is none.
template <typename Each>
DnsResult forEachAnswer(const std::string& name, const DnsServer& server, ns_type type, Each each) {
  auto resolver = std::make_unique<Resolver>(server);  // 64 KiB answer buffer: not on the stack
  ns_msg msg;
  DnsResult r = resolver->query(name, type, msg);
  if (r.status != DnsStatus::Found) return r;
  bool any = false;
  for (int i = 0; i < ns_msg_count(msg, ns_s_an); ++i) {
    ns_rr rr;
    if (ns_parserr(&msg, ns_s_an, i, &rr) < 0) {
      r.status = DnsStatus::Failed;
      r.error = "malformed DNS answer";
      return r;
    }
    if (ns_rr_type(rr) != type) continue;  // CNAMEs on the way
    if (!each(msg, rr, r)) {
      r.status = DnsStatus::Failed;
      if (r.error.empty()) r.error = "malformed DNS record";
      return r;
    }
    any = true;
  }
  if (!any) r.status = DnsStatus::NoRecords;
  return r;
}

}  // namespace

DnsResult querySrv(const std::string& name, const DnsServer& server) {
  return forEachAnswer(name, server, ns_t_srv, [](ns_msg& msg, ns_rr& rr, DnsResult& r) {
    const unsigned char* data = ns_rr_rdata(rr);
    if (ns_rr_rdlen(rr) < 7) return false;  // priority, weight, port, then the target name
    char target[NS_MAXDNAME];
    if (dn_expand(ns_msg_base(msg), ns_msg_end(msg), data + 6, target, sizeof target) < 0) return false;
    r.srv.push_back({withoutTrailingDot(target), static_cast<uint16_t>(ns_get16(data + 4)), ns_rr_ttl(rr)});
    return true;
  });
}

DnsResult queryTxt(const std::string& name, const DnsServer& server) {
  return forEachAnswer(name, server, ns_t_txt, [](ns_msg&, ns_rr& rr, DnsResult& r) {
    // character-strings: a length byte, then that many bytes; a record's strings are one text.
    const unsigned char* p = ns_rr_rdata(rr);
    const unsigned char* end = p + ns_rr_rdlen(rr);
    std::string text;
    while (p < end) {
      const size_t len = *p++;
      if (len > static_cast<size_t>(end - p)) return false;
      text.append(reinterpret_cast<const char*>(p), len);
      p += len;
    }
    r.txt.push_back(std::move(text));
    return true;
  });
}

DnsResult queryAddresses(const std::string& name, const DnsServer& server) {
  auto collect = [](int family, size_t size) {
    return [family, size](ns_msg&, ns_rr& rr, DnsResult& r) {
      if (ns_rr_rdlen(rr) != size) return false;
      char text[INET6_ADDRSTRLEN];
      if (!inet_ntop(family, ns_rr_rdata(rr), text, sizeof text)) return false;
      r.addresses.emplace_back(text);
      return true;
    };
  };
  DnsResult v4 = forEachAnswer(name, server, ns_t_a, collect(AF_INET, 4));
  if (v4.status != DnsStatus::NoRecords) return v4;
  return forEachAnswer(name, server, ns_t_aaaa, collect(AF_INET6, 16));
}

}  // namespace shardscope::proxy
