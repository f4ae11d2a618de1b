#include "config/redact.h"

#include <mutex>
#include <vector>

namespace shardscope::config {
namespace {

std::mutex secrets_mutex;
std::vector<std::string>& secrets() {
  static std::vector<std::string> list;
  return list;
}

// Where a URI's authority ends in free text: the first character a URI cannot hold unescaped.
bool endsUri(char c) {
  return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '"' || c == '\'' || c == '<' || c == '>' || c == '`';
}

void maskUriPasswords(std::string& s) {
  for (size_t scheme = s.find("://"); scheme != std::string::npos; scheme = s.find("://", scheme + 3)) {
    size_t start = scheme + 3;
    size_t end = start;
    while (end < s.size() && !endsUri(s[end])) ++end;
    // user:password@hosts — the last '@' ends the user info (a raw '@' in a password included).
    size_t at = s.rfind('@', end == start ? start : end - 1);
    if (at == std::string::npos || at < start) continue;
    size_t colon = s.find(':', start);
    if (colon == std::string::npos || colon > at) continue;  // user without password
    s.replace(colon + 1, at - colon - 1, "***");
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
  if (out.find("://") != std::string::npos) maskUriPasswords(out);
  std::lock_guard lock(secrets_mutex);
  for (const auto& secret : secrets())
    for (size_t at = out.find(secret); at != std::string::npos; at = out.find(secret, at + 3)) out.replace(at, secret.size(), "***");
  return out;
}

}  // namespace shardscope::config
