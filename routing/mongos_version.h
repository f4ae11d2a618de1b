// Which mongos release the targeting rules model. Single-document writes without the shard key
// changed in 7.1: before, mongos refuses them (unless the filter has an exact _id); from 7.1 it runs
// them in two phases (mongo-semantics.md B "Writes"). The version comes from, in order: the caller
// (`shardscope explain --mongos-version`), the config key `routing.mongos_version`, what the proxy
// learned from the cluster (hello's maxWireVersion); unknown means the newest rules, said so in
// the reason.
#pragma once
#include <bson/bson.h>

#include <cstdint>
#include <string>
#include <string_view>

namespace shardscope::routing {

struct MongosVersion {
  int major = 0, minor = 0;  // 0.0 = unknown

  bool known() const { return major > 0; }
  bool atLeast(int maj, int min) const { return major > maj || (major == maj && minor >= min); }
  // 7.1+ runs single-document writes without the shard key in two phases; unknown assumes so.
  bool twoPhaseWrites() const { return !known() || atLeast(7, 1); }
  std::string str() const { return std::to_string(major) + "." + std::to_string(minor); }
  // "7.0", "7.0.12", "8": false on anything else.
  static bool parse(std::string_view text, MongosVersion& out);
  // hello's maxWireVersion -> the release that introduced it (17 = 6.0 ... 21 = 7.0, 22 = 7.1,
  // 25 = 8.0); below 6.0 (wire 17) only the major line matters here, so 13..16 map to 5.x, older to 4.4.
  static MongosVersion fromWireVersion(int32_t max_wire_version);
  // From a buildInfo reply ("version": "7.0.12") or, failing that, a hello reply (maxWireVersion).
  static MongosVersion fromReply(const bson_t& reply);
};

// Process-wide: the configured version (routing.mongos_version) wins over the learned one.
void setConfiguredMongosVersion(MongosVersion v);
void noteLearnedMongosVersion(MongosVersion v);
// A hello reply passing through the proxy: a mongos ("msg": "isdbgrid") states its maxWireVersion.
// Returns true when it taught a version.
bool learnMongosVersionFromHello(const bson_t& reply);
MongosVersion effectiveMongosVersion();

}  // namespace shardscope::routing
