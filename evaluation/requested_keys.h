// The candidate keys `shardscope evaluate` asks a live sidecar to export facts for, beyond those its
// own traffic proposes (a fleet whose sidecars saw different shapes ranks keys some sidecar never
// proposed; without that sidecar's facts the key is not evaluable). Carried in the query string of
// /evaluate/sketches as `keys=` hex of the JSON {"ns": ["key JSON", ...]}: hex needs no escaping
// rules for the namespace and field names, which are a client's bytes.
#pragma once
#include <map>
#include <string>
#include <string_view>
#include <vector>

namespace shardscope::evaluation {

using RequestedKeys = std::map<std::string, std::vector<std::string>>;

std::string encodeRequestedKeys(const RequestedKeys& keys);
// false: not hex of a JSON object of string arrays (the request is refused, nothing is guessed).
bool decodeRequestedKeys(std::string_view hex, RequestedKeys& out);

}  // namespace shardscope::evaluation
