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
  double targetedShare = 0;  // of the interval, defined as /stats's targetedShare (stats/hosts_targeted.h)
  uint64_t targetable = 0;   // its denominator: operations on sharded collections; 0 = no share to show
  std::vector<std::pair<std::string, double>> shards;               // name, ops/s
  std::vector<ShapeRate> shapes;                                     // busiest first, active ones only
};

// "targeted 87.5%", or "targeted - (no traffic)" when the interval had nothing to target.
std::string targetedText(const IntervalRates& r);

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
