#include "routing/key_candidate.h"

#include "routing/shard_key_pattern.h"

namespace shardscope::routing {
namespace {

std::string_view trim(std::string_view s) {
  auto b = s.find_first_not_of(" \t");
  if (b == std::string_view::npos) return {};
  return s.substr(b, s.find_last_not_of(" \t") - b + 1);
}

}  // namespace

bool parseKeyCandidate(std::string_view spec, KeyCandidate& out, std::string& error) {
  auto colon = spec.find(':');
  if (colon == std::string_view::npos || spec.find('{') < colon) {
    error = "expected " + std::string(kKeyCandidateSyntax) + ", got '" + std::string(spec) + "'";
    return false;
  }
  std::string_view ns = trim(spec.substr(0, colon));
  auto dot = ns.find('.');
  if (dot == std::string_view::npos || dot == 0 || dot + 1 == ns.size() || ns.find(' ') != std::string_view::npos) {
    error = "'" + std::string(spec) + "': the namespace must be db.collection";
    return false;
  }
  std::string keyError;
  auto pattern = ShardKeyPattern::fromJson(trim(spec.substr(colon + 1)), keyError);
  if (!pattern) {
    error = std::string(ns) + ": " + keyError;
    return false;
  }
  out = {std::string(ns), pattern->toJson()};
  return true;
}

}  // namespace shardscope::routing
