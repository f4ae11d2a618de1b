// `shardscope stats`: a terminal view of a running proxy's live routing statistics (GET /stats):
// top query shapes by count with their class, broadcast share, fan-out and latency.
#include <bson/bson.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <string_view>
#include <thread>


#include "cli/admin_client.h"
#include "cli/cli_support.h"
#include "cli/commands.h"
#include "cli/stats_doc.h"
#include "cli/stats_watch.h"
#include "common/name_text.h"

namespace shardscope::cli {
namespace {

struct StatsArgs {
  std::string admin;
  AdminOptions auth_options;
  AdminUrl url;
  AdminAuth auth;
  size_t top = 20;
  double interval = 2.0;
  double watch = 0;    // > 0: per-interval rates every `watch` seconds
  uint64_t count = 0;  // --watch: intervals to print (0 = until interrupted)
  bool once = false;
  bool json = false;
};

// A latency with the digits the dashboard shows (admin/dashboard_page.cpp fmtNs): three significant
// digits from 1 us to 10 ms, where the CLI printed "0us" for 300 ns and "1.2ms" beside the page's 1.23 ms.
std::string fmtNs(double ns) {
  char buf[32];
  if (ns <= 0) return "-";
  if (ns < 1e3) std::snprintf(buf, sizeof buf, "%.0fns", ns);
  else if (ns < 1e6) std::snprintf(buf, sizeof buf, ns < 1e4 ? "%.1fus" : "%.0fus", ns / 1e3);
  else if (ns < 1e9) std::snprintf(buf, sizeof buf, ns < 1e7 ? "%.2fms" : "%.1fms", ns / 1e6);
  else std::snprintf(buf, sizeof buf, "%.2fs", ns / 1e9);
  return buf;
}

// A share as the dashboard writes it (admin/dashboard_page.cpp fmtPct): two decimals below 0.1%, so
// a rare class is not printed as 0.0% where the page says 0.05%; no number: "-".
std::string fmtPct(double x) {
  if (!std::isfinite(x)) return "-";
  char buf[32];
  std::snprintf(buf, sizeof buf, x > 0 && x < 0.001 ? "%.2f%%" : "%.1f%%", 100 * x);
  return buf;
}

// "health: DOWN" and the reason, from /stats "health" (admin/health.h); nothing when /stats has none.
void printHealth(const Doc& d) {
  const std::string state = d.str("health.state");
  if (state.empty()) return;
  if (state == "ok") {
    std::string line = "health: ok";
    d.each("health.components", [&](const Doc& c) { line += "  " + c.str("component") + " " + c.str("state"); });
    std::printf("%s\n", line.c_str());
    return;
  }
  std::printf("!! health: %s\n", state == "down" ? "DOWN: no mongos reachable, every client operation fails" : "DEGRADED");
  d.each("health.components", [&](const Doc& c) {
    std::printf("!!   %s %s: %s\n", c.str("component").c_str(), c.str("state").c_str(), c.str("detail").c_str());
  });
}

// The hot-shard verdict of /stats "hotness" (stats/hotness.h): its first namespace is the most
// imbalanced one judged, when any is.
void printHotness(const Doc& d) {
  bool printed = false;
  d.each("hotness.namespaces", [&](const Doc& n) {
    if (printed) return;
    printed = true;
    if (!n.flag("judged")) {
      std::printf("hot shard: - (too few targeted operations: %.0f per chunk-owning shard needed)\n",
                  d.num("hotness.minTargetedPerShard"));
      return;
    }
    char ratio[32];
    if (n.isNull("ratio")) std::snprintf(ratio, sizeof ratio, "inf");
    else std::snprintf(ratio, sizeof ratio, "%.2fx", n.num("ratio"));
    std::printf("hot shard: %s %s %s, busiest/least busy chunk owner (%.0f targeted ops since reset; threshold %.1f)%s\n",
                common::textName(n.str("ns")).c_str(), ratio, n.str("hottest").c_str(), n.num("targetedOps"), d.num("hotness.threshold"),
                n.flag("hot") ? "  HOT" : "  balanced");
  });
  if (!printed) std::printf("hot shard: - (no operation reached a shard yet)\n");
}

size_t terminalWidth() {
  winsize w{};
  if (isatty(STDOUT_FILENO) && ioctl(STDOUT_FILENO, TIOCGWINSZ, &w) == 0 && w.ws_col > 40) return w.ws_col;
  return 200;
}

void printTable(const bson_t* stats, const StatsArgs& args) {
  Doc d(stats);
  double ops = d.num("totals.ops");
  // Health first: a down mongos must be the first thing read (the same words as /stats and the page).
  printHealth(d);
  std::printf("shardscope stats  %s  since reset %.0fs  ops %.0f  errors %.0f (replies with errors)  connections %.0f\n",
              args.url.text.c_str(), d.num("windowSeconds"), ops, d.num("totals.errors"), d.num("process.connectionsActive"));
  // Which load of the routing table is in force (/stats "routing"), as the page and /evaluate say it.
  if (d.num("routing.generation") > 0)
    std::printf("routing table: load %.0f (%s), published %s\n", d.num("routing.generation"),
                d.str("routing.source").c_str(), d.str("routing.loadedAt").c_str());
  // Every share is /stats's (stats/hosts_targeted.h), each with its denominator.
  const double sharded = d.num("totals.shardedOps");
  auto share = [&](const char* path) { return sharded > 0 ? fmtPct(d.num(path)) : std::string("-"); };
  std::printf("of %.0f ops on sharded collections: targeted %s (oneShard)  broadcast %s (allShards, every chunk owner reached)\n",
              sharded, share("totals.targetedShare").c_str(), share("totals.allShardsShare").c_str());
  std::printf("shards reached (numHostsTargeted)  oneShard %.0f  manyShards %.0f  allShards %.0f  unsharded %.0f\n",
              d.num("totals.hostsTargeted.oneShard"), d.num("totals.hostsTargeted.manyShards"),
              d.num("totals.hostsTargeted.allShards"), d.num("totals.hostsTargeted.unsharded"));
  std::string classes = "class (why; % of all " + std::to_string(static_cast<uint64_t>(ops)) + " ops)";
  for (const char* c : {"single", "multi", "broadcast", "unsharded", "no_collection"}) {
    char buf[96];
    std::string count = std::string("totals.targeting.") + c, pct = std::string("totals.targetingShare.") + c;
    std::snprintf(buf, sizeof buf, "  %s %.0f (%s)", c, d.num(count.c_str()), fmtPct(d.num(pct.c_str())).c_str());
    classes += buf;
  }
  std::printf("%s\n", classes.c_str());
  printHotness(d);
  std::string shards = "shards (ops since reset; a broadcast counts on each):";
  const size_t empty = shards.size();
  d.each("shards", [&](const Doc& s) {
    char buf[128];
    std::snprintf(buf, sizeof buf, "  %s %.0f (%s)", s.str("name").c_str(), s.num("ops"), fmtPct(s.num("share")).c_str());
    shards += buf;
  });
  std::printf("%s\n\n", shards.size() == empty ? "shards: (none touched yet)" : shards.c_str());
  std::printf("%10s %7s %-13s %6s %-10s %9s %8s %8s %6s  %-28s %s\n", "COUNT", "SHARE", "CLASS", "BCAST", "REACHED",
              "SHARDS", "P50", "P99", "ERR", "NAMESPACE COMMAND", "SHAPE");
  size_t width = terminalWidth();
  size_t rows = 0;
  d.each("shapes", [&](const Doc& s) {
    if (rows++ >= args.top) return;
    char fanout[32];
    std::snprintf(fanout, sizeof fanout, "%.1f/%.0f", s.num("shardsTouched.mean"), s.num("shardsTouched.max"));
    const std::string where = common::truncateUtf8(common::textName(s.str("ns")) + " " + common::textName(s.str("command")), 28, "~");
    char line[512];
    int n = std::snprintf(line, sizeof line, "%10.0f %7s %-13s %6s %-10s %9s %8s %8s %6.0f  %-28s ", s.num("count"),
                          ops > 0 ? fmtPct(s.num("share")).c_str() : "-", s.str("class").c_str(),
                          s.isNull("broadcastShare") ? "-" : fmtPct(s.num("broadcastShare")).c_str(), s.str("countClass").c_str(), fanout, fmtNs(s.num("latency.p50Ns")).c_str(),
                          fmtNs(s.num("latency.p99Ns")).c_str(), s.num("errors.total"), where.c_str());
    size_t room = width > static_cast<size_t>(n) + 8 ? width - static_cast<size_t>(n) : 8;
    const std::string shape = common::truncateUtf8(common::textName(s.str("shape")), room, "~");
    std::printf("%s%s\n", line, shape.c_str());
  });
  if (rows == 0) std::printf("(no operations yet)\n");
  else std::printf("SHARE: of all ops; CLASS: why (shardscope's reason); BCAST: of the shape's ops on sharded collections, those that reached all shards (allShards)\n");
  if (d.num("shapeCap.opsInOther") > 0)
    std::printf("\nshape cap (%.0f per namespace) reached: %.0f operations counted as <other>\n",
                d.num("shapeCap.maxShapesPerNamespace"), d.num("shapeCap.opsInOther"));
  std::fflush(stdout);
}

// GET /stats and parse it; nullptr with a message printed when that fails.
bson_t* fetchStats(const StatsArgs& args, const std::string& target) {
  std::string body, error;
  unsigned status = adminGet(args.url, target, args.auth, body, error);
  if (status != 200) {
    if (status == 0) std::fprintf(stderr, "shardscope stats: cannot reach %s: %s\n", args.admin.c_str(), error.c_str());
    else std::fprintf(stderr, "shardscope stats: %s answered HTTP %u: %s", args.admin.c_str(), status, body.c_str());
    return nullptr;
  }
  if (args.json) {
    std::fwrite(body.data(), 1, body.size(), stdout);
    return bson_new();
  }
  // Parsed into a bson_t of its own: bson_init_from_json re-initialises what it is given, so a
  // bson_new() passed to it lost its heap flag and its 128 bytes at every fetch (LeakSanitizer).
  bson_t parsed;
  if (!parseJson(body, &parsed, error)) {
    std::fprintf(stderr, "shardscope stats: /stats is not valid JSON: %s\n", error.c_str());
    return nullptr;
  }
  bson_t* doc = bson_copy(&parsed);
  bson_destroy(&parsed);
  return doc;
}

int runStats(const CLI::App& cmd, StatsArgs& args) {
  std::string error;
  if (!parseAdminUrl(args.admin, args.url, error)) return usageError(cmd, "--admin " + error);
  if (!resolveAdminAuth(args.auth_options, args.auth, error)) {
    std::fprintf(stderr, "shardscope stats: %s\n", error.c_str());
    return 2;
  }
  if (cmd.count("--watch") > 0) {
    WatchOptions watch{args.watch > 0 ? args.watch : 1.0, args.count, args.top, args.admin};
    return watchStats(watch, [&] { return fetchStats(args, "/stats"); });
  }
  const bool tty = isatty(STDOUT_FILENO);
  bool answering = true;
  for (bool first = true;; first = false) {
    bson_t* doc = fetchStats(args, args.json ? "/stats" : "/stats?top=" + std::to_string(args.top));
    if (!doc) {
      if (args.once || args.json || first) return 1;
      // The last table (its health line too) stays in view: say it is stale, as the page's
      // NO DATA banner does, once per outage (the mongos may be down by now).
      if (answering)
        std::printf("\n!! health: NO DATA: %s does not answer; every figure above is from its last answer, "
                    "upstream health unknown\n",
                    args.url.text.c_str());
      std::fflush(stdout);
      answering = false;
    } else if (args.json) {
      bson_destroy(doc);
      return 0;
    } else {
      if (tty && !args.once) std::fputs("\033[H\033[2J", stdout);  // redraw in place
      else if (!first) std::fputs("\n", stdout);
      printTable(doc, args);
      bson_destroy(doc);
      answering = true;
      if (args.once) return 0;
    }
    std::this_thread::sleep_for(std::chrono::duration<double>(args.interval));
  }
}

}  // namespace

Command addStatsCommand(CLI::App& root) {
  auto args = std::make_shared<StatsArgs>();
  CLI::App* cmd = root.add_subcommand("stats", "live routing statistics of a running proxy: --admin URL [--watch [S]]");
  cmd->add_option("--admin", args->admin, "the proxy's admin endpoint, e.g. http://127.0.0.1:9901 or https://...")
      ->type_name("URL")
      ->required();
  addAdminOptions(*cmd, args->auth_options);
  cmd->add_option("--top", args->top, "shapes to show (default 20)")->type_name("N")->check(wholeNumber(1, 100000));
  cmd->add_option("--interval", args->interval, "refresh period of the cumulative table (default 2)")
      ->type_name("SECONDS")
      ->check(decimalNumber(0.1, 86400));
  auto* watch = cmd->add_option("--watch", args->watch,
                                "mongostat style: per-interval rates (ops/s per class, shard and shape) every SECONDS "
                                "(default 1), from two /stats snapshots")
                    ->type_name("[SECONDS]")
                    ->expected(0, 1)
                    ->default_str("1")
                    ->check(decimalNumber(0.1, 86400));
  cmd->add_option("--count", args->count, "with --watch: stop after N intervals (default: until interrupted)")
      ->type_name("N")
      ->needs(watch)
      ->check(wholeNumber(1, uint64_t{1} << 40));
  auto* once = cmd->add_flag("--once", args->once, "print one table and exit");
  cmd->add_flag("--json", args->json, "print the /stats JSON document once and exit (for scripts)")->excludes(watch)->excludes(once);
  watch->excludes(once);
  return {cmd, [cmd, args] { return runStats(*cmd, *args); }};
}

}  // namespace shardscope::cli
