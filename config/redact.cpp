#include "config/redact.h"

#include <algorithm>
#include <mutex>
#include <vector>

namespace shardscope::config {
namespace {

std::mutex secrets_mutex;
std::vector<std::string>& secrets() {
  static std::vector<std::string> list;
  return list;
}

bool isSpace(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }

bool equalsIgnoringCase(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i)
    if ((a[i] | 0x20) != (b[i] | 0x20)) return false;
  return true;
}


// user:password@hosts. libmongoc takes quotes, '<', '?' and '@' raw in a password and refuses a raw
// '/', so the user info ends at the last '@' before the first '/' (or the end of the word).
// Returns where the host list starts.
size_t maskUserInfo(std::string& s, size_t start) {
  size_t end = start;
  while (end < s.size() && !isSpace(s[end]) && s[end] != '/') ++end;
  size_t at = end == start ? std::string::npos : s.rfind('@', end - 1);
  if (at == std::string::npos || at < start) return start;
  size_t colon = s.find(':', start);
  if (colon == std::string::npos || colon > at) return at + 1;  // user without password
  s.replace(colon + 1, at - colon - 1, "***");
  return colon + 5;  // past "***@"
}

// Options whose value is a secret (the connection-string specification's names; libmongoc's older
// ssl* alias too), and the authMechanismProperties entry that is one (MONGODB-AWS).
bool secretOption(std::string_view name) {
  return equalsIgnoringCase(name, "tlsCertificateKeyFilePassword") ||
         equalsIgnoringCase(name, "sslClientCertificateKeyPassword");
}

// key:value,key:value (the ':' possibly written %3A): the AWS session token's value masked.
std::string maskedMechanismProperties(std::string_view value) {
  std::string out;
  while (true) {
    size_t comma = value.find(',');
    std::string_view item = value.substr(0, comma);
    size_t sep = item.find(':'), sep_len = 1;
    if (sep == std::string_view::npos) {
      sep = std::min(item.find("%3A"), item.find("%3a"));
      sep_len = 3;
    }
    if (sep != std::string_view::npos && equalsIgnoringCase(item.substr(0, sep), "AWS_SESSION_TOKEN")) {
      out.append(item.substr(0, sep + sep_len)).append("***");
    } else {
      out.append(item);
    }
    if (comma == std::string_view::npos) return out;
    out.push_back(',');
    value.remove_prefix(comma + 1);
  }
}

// ?name=value&name=value (';' too) up to the end of the word: secret options' values masked.
void maskSecretOptions(std::string& s, size_t hosts) {
  size_t end = hosts;
  while (end < s.size() && !isSpace(s[end])) ++end;
  size_t q = s.find('?', hosts);
  if (q == std::string::npos || q >= end) return;
  std::string_view options(s.data() + q + 1, end - q - 1);
  std::string out;
  while (true) {
    size_t stop = options.find_first_of("&;");
    std::string_view option = options.substr(0, stop);
    size_t eq = option.find('=');
    std::string_view name = option.substr(0, eq);
    if (eq == std::string_view::npos) {
      out.append(option);
    } else if (secretOption(name)) {
      out.append(option.substr(0, eq + 1)).append("***");
    } else if (equalsIgnoringCase(name, "authMechanismProperties")) {
      out.append(option.substr(0, eq + 1)).append(maskedMechanismProperties(option.substr(eq + 1)));
    } else {
      out.append(option);
    }
    if (stop == std::string_view::npos) break;
    out.push_back(options[stop]);
    options.remove_prefix(stop + 1);
  }
  s.replace(q + 1, end - q - 1, out);
}

void maskUris(std::string& s) {
  for (size_t scheme = s.find("://"); scheme != std::string::npos; scheme = s.find("://", scheme + 3)) {
    size_t hosts = maskUserInfo(s, scheme + 3);
    maskSecretOptions(s, hosts);
  }
}

}  // namespace

void registerSecret(const std::string& secret) {
  if (secret.size() < 4) return;
  std::lock_guard lock(secrets_mutex);
  for (const auto& s : secrets())
    if (s == secret) return;
  secrets().push_back(secret);
}

std::string redactSecrets(std::string_view text) {
  std::string out(text);
  if (out.find("://") != std::string::npos) maskUris(out);
  std::lock_guard lock(secrets_mutex);
  for (const auto& secret : secrets())
    for (size_t at = out.find(secret); at != std::string::npos; at = out.find(secret, at + 3)) out.replace(at, secret.size(), "***");
  return out;
}

}  // namespace shardscope::config
