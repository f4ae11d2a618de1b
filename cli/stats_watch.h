// `shardscope stats --watch`: per-interval rates (mongostat style) from two /stats snapshots.
#pragma once
#include <bson/bson.h>

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace shardscope::cli {

struct ShapeRate {
  std::string ns, command, shape, cls;
  double per_second = 0;
};

struct IntervalRates {
  double seconds = 0;
  bool restarted = false;  // counters went backwards (reset or restart): rates are since then
  double ops = 0, single = 0, multi = 0, broadcast = 0, errors = 0;  // per second
  double targetedShare = 0;   // of the interval, defined as /stats's targetedShare (stats/hosts_targeted.h)
  double allShardsShare = 0;  // of the interval, defined as /stats's allShardsShare
  uint64_t shardedOps = 0;    // the interval's operations on sharded collections: both shares' denominator
  std::string health;         // /stats "health.state" of the later snapshot ("" when /stats has none)
  std::string healthDetail;   // the components that are not healthy, with their reasons
  std::vector<std::pair<std::string, double>> shards;               // name, ops/s
  std::vector<ShapeRate> shapes;                                     // busiest first, active ones only
};

// Rates between `before` and `after` (/stats documents with every shape listed).
IntervalRates intervalRates(const bson_t* before, const bson_t* after);

struct WatchOptions {
  double seconds = 1;
  uint64_t count = 0;  // intervals to print; 0 = until interrupted
  size_t top = 20;
  std::string label;  // the admin URL, for the header
};

// Prints one block per interval; `fetch` returns a /stats document (caller frees) or nullptr.
int watchStats(const WatchOptions& options, const std::function<bson_t*()>& fetch);

}  // namespace shardscope::cli
