// Names a client chooses (namespaces, command names) as the proxy keeps and shows them: bounded in
// bytes, so what a client sends never grows what the statistics, the evaluation or the mirror hold,
// nor any page or label that shows them (issue 28).
#pragma once
#include <cstddef>
#include <string>
#include <string_view>

namespace shardscope::common {

// MongoDB's longest namespace is 255 bytes (235 for a sharded collection; featureCompatibilityVersion
// 4.4 and later); real command names are under 64. Every name the server accepts is kept whole, so
// /stats and /metrics name a collection as /chunks, /evaluate and the routing table do; longer
// names are refused by the server anyway, and keeping them whole would only serve a hostile client.
inline constexpr size_t kMaxKeptNameBytes = 255;

// The names the proxy gives its own buckets (statistics and the mirror's overflow rows, /metrics
// series past their caps, messages that did not parse). No client name is kept as one of them.
inline constexpr std::string_view kOtherName = "<other>";
inline constexpr std::string_view kUnparsedName = "<unparsed>";

// `name` itself when it is at most kMaxKeptNameBytes long; otherwise (written into `storage`) its
// first bytes cut at a UTF-8 boundary, "...#" and the 16-hex hash of the whole name: at most
// kMaxKeptNameBytes, the same text for the same name, distinct for distinct names. A client name
// equal to a bucket's name above is kept as that name, "#" and its hash, so a database or command
// a client calls "<other>" is never counted with (nor shown as) the overflow bucket.
std::string_view boundedName(std::string_view name, std::string& storage);
// Appends "#" and the 16-hex hash of `name`'s bytes: what tells apart names that had to be shortened
// or altered to be shown (boundedName, utf8Name, Prometheus labels).
void appendNameHash(std::string_view name, std::string& out);

inline std::string boundedName(std::string_view name) {
  std::string storage;
  return std::string(boundedName(name, storage));
}

}  // namespace shardscope::common
