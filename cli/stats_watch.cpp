#include "cli/stats_watch.h"

#include <algorithm>
#include <array>
#include <chrono>
#include <cstdio>
#include <ctime>
#include <map>
#include <thread>

#include "cli/stats_doc.h"
#include "common/name_text.h"
#include "stats/hosts_targeted.h"

namespace shardscope::cli {
namespace {

// A counter's growth over the interval; after a reset it counts from zero again.
double growth(double before, double after, bool restarted) { return restarted ? after : std::max(0.0, after - before); }

std::string clock() {
  std::time_t t = std::time(nullptr);
  char buf[16];
  std::strftime(buf, sizeof buf, "%H:%M:%S", std::localtime(&t));
  return buf;
}

}  // namespace

IntervalRates intervalRates(const bson_t* before, const bson_t* after) {
  Doc a(before), b(after);
  IntervalRates r;
  r.restarted = b.str("resetAt") != a.str("resetAt") || b.num("totals.ops") < a.num("totals.ops");
  r.seconds = r.restarted ? b.num("windowSeconds") : b.num("uptimeSeconds") - a.num("uptimeSeconds");
  if (r.seconds <= 0) r.seconds = 1e-3;
  auto rate = [&](const char* path) { return growth(a.num(path), b.num(path), r.restarted) / r.seconds; };
  r.ops = rate("totals.ops");
  r.single = rate("totals.targeting.single");
  r.multi = rate("totals.targeting.multi");
  r.broadcast = rate("totals.targeting.broadcast");
  r.errors = rate("totals.errors");
  // The interval's growth of each count class, through the same formula as /stats's targetedShare.
  std::array<uint64_t, stats::kHostsTargetedCount> hosts{};
  for (size_t i = 0; i < stats::kHostsTargetedCount; ++i) {
    std::string path = "totals.hostsTargeted." + std::string(stats::kHostsTargetedNames[i]);
    hosts[i] = static_cast<uint64_t>(growth(a.num(path.c_str()), b.num(path.c_str()), r.restarted));
  }
  r.targetedShare = stats::targetedShare(hosts);
  r.allShardsShare = stats::allShardsShare(hosts);
  r.shardedOps = stats::shardedOps(hosts);
  r.health = b.str("health.state");
  b.each("health.components", [&](const Doc& c) {
    if (c.str("state") == "up" || c.str("state") == "ok") return;
    r.healthDetail += (r.healthDetail.empty() ? "" : "; ") + c.str("component") + " " + c.str("state") + ": " + c.str("detail");
  });
  std::map<std::string, double> shardsBefore;
  a.each("shards", [&](const Doc& s) { shardsBefore[s.str("name")] = s.num("ops"); });
  b.each("shards", [&](const Doc& s) {
    const std::string name = s.str("name");
    r.shards.emplace_back(name, growth(shardsBefore[name], s.num("ops"), r.restarted) / r.seconds);
  });
  std::map<std::string, double> shapesBefore;  // by shape id
  a.each("shapes", [&](const Doc& s) { shapesBefore[s.str("id")] = s.num("count"); });
  b.each("shapes", [&](const Doc& s) {
    auto it = shapesBefore.find(s.str("id"));
    double n = growth(it == shapesBefore.end() ? 0 : it->second, s.num("count"), r.restarted);
    if (n > 0) r.shapes.push_back({s.str("ns"), s.str("command"), s.str("shape"), s.str("class"), n / r.seconds});
  });
  std::stable_sort(r.shapes.begin(), r.shapes.end(),
                   [](const ShapeRate& x, const ShapeRate& y) { return x.per_second > y.per_second; });
  return r;
}

int watchStats(const WatchOptions& options, const std::function<bson_t*()>& fetch) {
  bson_t* previous = fetch();
  if (!previous) return 1;
  for (uint64_t printed = 0; options.count == 0 || printed < options.count; ++printed) {
    std::this_thread::sleep_for(std::chrono::duration<double>(options.seconds));
    bson_t* current = fetch();
    if (!current) {
      bson_destroy(previous);
      return 1;
    }
    IntervalRates r = intervalRates(previous, current);
    bson_destroy(previous);
    previous = current;
    if (!r.health.empty() && r.health != "ok")
      std::printf("!! health %s%s: %s\n", r.health == "down" ? "DOWN" : "DEGRADED",
                  r.health == "down" ? " (no mongos reachable, every client operation fails)" : "", r.healthDetail.c_str());
    // Shares of the interval's operations on sharded collections, as /stats defines them; "-" when
    // the interval had none (0% would claim something about no traffic).
    char shares[128] = "targeted -  broadcast -";
    if (r.shardedOps > 0)
      std::snprintf(shares, sizeof shares, "targeted %.1f%%  broadcast %.1f%% (allShards, of %llu sharded ops)",
                    100 * r.targetedShare, 100 * r.allShardsShare, static_cast<unsigned long long>(r.shardedOps));
    std::printf("%s  %s  interval %.1fs%s  ops/s %.1f  errors/s %.1f  %s  class (why) ops/s: single %.1f  multi %.1f  broadcast %.1f\n",
                clock().c_str(), options.label.c_str(), r.seconds, r.restarted ? " (counters reset)" : "", r.ops, r.errors, shares,
                r.single, r.multi, r.broadcast);
    std::string shards = "  shards ops/s:";
    for (const auto& [name, perSecond] : r.shards) {
      char buf[96];
      std::snprintf(buf, sizeof buf, "  %s %.1f", name.c_str(), perSecond);
      shards += buf;
    }
    std::printf("%s\n", r.shards.empty() ? "  shards ops/s: (none known)" : shards.c_str());
    std::printf("  %9s  %-10s %-28s %s\n", "OPS/S", "CLASS", "NAMESPACE COMMAND", "SHAPE");
    size_t rows = 0;
    for (const auto& s : r.shapes) {
      if (rows++ >= options.top) break;
      const std::string where = common::truncateUtf8(common::textName(s.ns) + " " + common::textName(s.command), 28, "~");
      const std::string shape = common::truncateUtf8(common::textName(s.shape), 100, "~");
      std::printf("  %9.1f  %-10s %-28s %s\n", s.per_second, s.cls.c_str(), where.c_str(), shape.c_str());
    }
    if (rows == 0) std::printf("  (no operations in this interval)\n");
    std::printf("\n");
    std::fflush(stdout);
  }
  bson_destroy(previous);
  return 0;
}

}  // namespace shardscope::cli
