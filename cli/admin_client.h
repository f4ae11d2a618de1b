// HTTP(S) GET against a proxy's admin endpoint, shared by `stats` and `evaluate`.
#pragma once
#include <string>

namespace shardscope::cli {

struct AdminUrl {
  bool tls = false;
  std::string host;
  std::string port;
  std::string path;  // "" when the URL names none
  std::string text;  // as given, for messages
};

struct AdminAuth {
  std::string token;    // bearer token ("" = none)
  std::string ca_file;  // HTTPS: trust these CAs instead of the system store
  bool insecure = false;  // HTTPS: skip certificate and host name verification
};

// http://HOST[:PORT][/path], https://..., or a bare HOST:PORT (http). False with `error` set.
bool parseAdminUrl(const std::string& url, AdminUrl& out, std::string& error);

// One GET with a deadline; the HTTP status, or 0 on a transport/TLS error with `error` set.
unsigned adminGet(const AdminUrl& url, const std::string& target, const AdminAuth& auth, std::string& body,
                  std::string& error);

}  // namespace shardscope::cli
