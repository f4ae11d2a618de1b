// `shardscope stats`: a terminal view of a running proxy's live routing statistics (GET /stats):
// top query shapes by count with their class, broadcast share, fan-out and latency.
#include <bson/bson.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>
#include <string_view>
#include <thread>

#include <boost/asio/connect.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>

#include "cli/commands.h"

namespace shardscope::cli {
namespace {

namespace beast = boost::beast;
namespace http = beast::http;
using tcp = boost::asio::ip::tcp;

struct StatsArgs {
  std::string host;
  std::string port = "80";
  std::string token;
  size_t top = 20;
  double interval = 2.0;
  bool once = false;
  bool json = false;
};

void usage(FILE* out) {
  std::fputs(
      "usage: shardscope stats --admin URL [options]\n"
      "\n"
      "  --admin URL         the proxy's admin endpoint, e.g. http://127.0.0.1:9100\n"
      "  --token-file FILE   bearer token for the admin endpoint (first line of FILE)\n"
      "  --top N             shapes to show (default 20)\n"
      "  --interval SECONDS  refresh period (default 2)\n"
      "  --once              print one table and exit\n"
      "  --json              print the /stats JSON document once and exit (for scripts)\n",
      out);
}

bool parseAdminUrl(std::string_view url, StatsArgs& args, std::string& error) {
  if (url.starts_with("https://")) {
    error = "https admin URLs are not supported (the admin endpoint is plain HTTP on localhost)";
    return false;
  }
  if (url.starts_with("http://")) url.remove_prefix(7);
  url = url.substr(0, url.find('/'));
  if (url.empty()) {
    error = "--admin needs HOST:PORT";
    return false;
  }
  size_t colon = url.rfind(':');
  if (url.front() == '[') {  // [::1]:9100
    size_t close = url.find(']');
    if (close == std::string_view::npos) {
      error = "bad IPv6 address in --admin";
      return false;
    }
    args.host = std::string(url.substr(1, close - 1));
    if (close + 1 < url.size() && url[close + 1] == ':') args.port = std::string(url.substr(close + 2));
    return true;
  }
  args.host = std::string(url.substr(0, colon));
  if (colon != std::string_view::npos) args.port = std::string(url.substr(colon + 1));
  return true;
}

// One GET with a 5 s deadline; returns the HTTP status (0 on a transport error, with `error` set).
unsigned httpGet(const StatsArgs& args, const std::string& target, std::string& body, std::string& error) {
  try {
    boost::asio::io_context io;
    tcp::resolver resolver(io);
    beast::tcp_stream stream(io);
    stream.expires_after(std::chrono::seconds(5));
    stream.connect(resolver.resolve(args.host, args.port));
    http::request<http::empty_body> req{http::verb::get, target, 11};
    req.set(http::field::host, args.host);
    req.set(http::field::user_agent, "shardscope-stats");
    if (!args.token.empty()) req.set(http::field::authorization, "Bearer " + args.token);
    http::write(stream, req);
    beast::flat_buffer buffer;
    http::response_parser<http::string_body> parser;
    parser.body_limit(256 * 1024 * 1024);
    http::read(stream, buffer, parser);
    body = std::move(parser.get().body());
    boost::system::error_code ignored;
    stream.socket().shutdown(tcp::socket::shutdown_both, ignored);
    return parser.get().result_int();
  } catch (const boost::system::system_error& e) {
    error = e.code().message();
    return 0;
  } catch (const std::exception& e) {
    error = e.what();
    return 0;
  }
}

// Reading the /stats document through libbson's JSON parser: no JSON library needed.
class Doc {
 public:
  explicit Doc(const bson_t* b) : b_(b) {}
  double num(const char* path) const {
    bson_iter_t it, found;
    if (!bson_iter_init(&it, b_) || !bson_iter_find_descendant(&it, path, &found)) return 0;
    return BSON_ITER_HOLDS_NUMBER(&found) ? bson_iter_as_double(&found) : 0;
  }
  std::string str(const char* path) const {
    bson_iter_t it, found;
    if (!bson_iter_init(&it, b_) || !bson_iter_find_descendant(&it, path, &found) || !BSON_ITER_HOLDS_UTF8(&found))
      return {};
    uint32_t len = 0;
    const char* s = bson_iter_utf8(&found, &len);
    return {s, len};
  }
  // Calls f(Doc) for each document in the array at `path`.
  template <typename F>
  void each(const char* path, F&& f) const {
    bson_iter_t it, found, child;
    if (!bson_iter_init(&it, b_) || !bson_iter_find_descendant(&it, path, &found) || !BSON_ITER_HOLDS_ARRAY(&found) ||
        !bson_iter_recurse(&found, &child))
      return;
    while (bson_iter_next(&child)) {
      if (!BSON_ITER_HOLDS_DOCUMENT(&child)) continue;
      uint32_t len = 0;
      const uint8_t* data = nullptr;
      bson_iter_document(&child, &len, &data);
      bson_t item;
      if (bson_init_static(&item, data, len)) f(Doc(&item));
    }
  }

 private:
  const bson_t* b_;
};

std::string fmtNs(double ns) {
  char buf[32];
  if (ns <= 0) return "-";
  if (ns < 1e6) std::snprintf(buf, sizeof buf, "%.0fus", ns / 1e3);
  else if (ns < 1e9) std::snprintf(buf, sizeof buf, "%.1fms", ns / 1e6);
  else std::snprintf(buf, sizeof buf, "%.2fs", ns / 1e9);
  return buf;
}

std::string fmtPct(double x) {
  char buf[16];
  std::snprintf(buf, sizeof buf, "%.1f%%", 100 * x);
  return buf;
}

size_t terminalWidth() {
  winsize w{};
  if (isatty(STDOUT_FILENO) && ioctl(STDOUT_FILENO, TIOCGWINSZ, &w) == 0 && w.ws_col > 40) return w.ws_col;
  return 200;
}

void printTable(const bson_t* stats, const StatsArgs& args) {
  Doc d(stats);
  double ops = d.num("totals.ops");
  double routed = d.num("totals.targeting.single") + d.num("totals.targeting.multi") + d.num("totals.targeting.broadcast");
  auto share = [&](const char* path) { return routed > 0 ? fmtPct(d.num(path) / routed) : std::string("-"); };
  std::printf("shardscope stats  %s:%s  ops %.0f  single %s  multi %s  broadcast %s  errors %.0f  connections %.0f  window %.0fs\n",
              args.host.c_str(), args.port.c_str(), ops, share("totals.targeting.single").c_str(),
              share("totals.targeting.multi").c_str(), share("totals.targeting.broadcast").c_str(),
              d.num("totals.errors"), d.num("process.connectionsActive"), d.num("windowSeconds"));
  std::string shards = "shards:";
  d.each("shards", [&](const Doc& s) {
    char buf[128];
    std::snprintf(buf, sizeof buf, "  %s %.0f (%s)", s.str("name").c_str(), s.num("ops"), fmtPct(s.num("share")).c_str());
    shards += buf;
  });
  std::printf("%s\n\n", shards == "shards:" ? "shards: (none touched yet)" : shards.c_str());
  std::printf("%10s %7s %-13s %6s %9s %8s %8s %6s  %-28s %s\n", "COUNT", "SHARE", "CLASS", "BCAST", "SHARDS", "P50", "P99",
              "ERR", "NAMESPACE COMMAND", "SHAPE");
  size_t width = terminalWidth();
  size_t rows = 0;
  d.each("shapes", [&](const Doc& s) {
    if (rows++ >= args.top) return;
    char fanout[32];
    std::snprintf(fanout, sizeof fanout, "%.1f/%.0f", s.num("shardsTouched.mean"), s.num("shardsTouched.max"));
    std::string where = s.str("ns") + " " + s.str("command");
    if (where.size() > 28) where = where.substr(0, 27) + "~";
    char line[512];
    int n = std::snprintf(line, sizeof line, "%10.0f %7s %-13s %6s %9s %8s %8s %6.0f  %-28s ", s.num("count"),
                          ops > 0 ? fmtPct(s.num("count") / ops).c_str() : "-", s.str("class").c_str(),
                          fmtPct(s.num("broadcastShare")).c_str(), fanout, fmtNs(s.num("latency.p50Ns")).c_str(),
                          fmtNs(s.num("latency.p99Ns")).c_str(), s.num("errors.total"), where.c_str());
    std::string shape = s.str("shape");
    size_t room = width > static_cast<size_t>(n) + 8 ? width - static_cast<size_t>(n) : 8;
    if (shape.size() > room) shape = shape.substr(0, room - 1) + "~";
    std::printf("%s%s\n", line, shape.c_str());
  });
  if (rows == 0) std::printf("(no operations yet)\n");
  if (d.num("shapeCap.opsInOther") > 0)
    std::printf("\nshape cap (%.0f per namespace) reached: %.0f operations counted as <other>\n",
                d.num("shapeCap.maxShapesPerNamespace"), d.num("shapeCap.opsInOther"));
  std::fflush(stdout);
}

}  // namespace

int runStats(int argc, char** argv) {
  StatsArgs args;
  std::string admin;
  for (int i = 1; i < argc; ++i) {
    std::string_view a = argv[i];
    auto value = [&](const char* name) -> const char* {
      if (i + 1 >= argc) {
        std::fprintf(stderr, "shardscope stats: %s needs a value\n", name);
        std::exit(2);
      }
      return argv[++i];
    };
    if (a == "--help" || a == "-h") {
      usage(stdout);
      return 0;
    } else if (a == "--admin") {
      admin = value("--admin");
    } else if (a == "--token-file") {
      std::ifstream in(value("--token-file"));
      if (!in || !std::getline(in, args.token) || args.token.empty()) {
        std::fprintf(stderr, "shardscope stats: cannot read a token from %s\n", argv[i]);
        return 2;
      }
    } else if (a == "--top") {
      args.top = std::strtoul(value("--top"), nullptr, 10);
    } else if (a == "--interval") {
      args.interval = std::strtod(value("--interval"), nullptr);
      if (args.interval <= 0) {
        std::fprintf(stderr, "shardscope stats: --interval must be positive\n");
        return 2;
      }
    } else if (a == "--once") {
      args.once = true;
    } else if (a == "--json") {
      args.json = true;
    } else {
      std::fprintf(stderr, "shardscope stats: unknown option '%s'\n\n", argv[i]);
      usage(stderr);
      return 2;
    }
  }
  std::string error;
  if (admin.empty()) {
    std::fprintf(stderr, "shardscope stats: --admin URL is required\n\n");
    usage(stderr);
    return 2;
  }
  if (!parseAdminUrl(admin, args, error)) {
    std::fprintf(stderr, "shardscope stats: %s\n", error.c_str());
    return 2;
  }
  const bool tty = isatty(STDOUT_FILENO);
  for (bool first = true;; first = false) {
    std::string body;
    std::string target = args.json ? "/stats" : "/stats?top=" + std::to_string(args.top);
    unsigned status = httpGet(args, target, body, error);
    if (status != 200) {
      if (status == 0) std::fprintf(stderr, "shardscope stats: cannot reach %s: %s\n", admin.c_str(), error.c_str());
      else std::fprintf(stderr, "shardscope stats: %s answered HTTP %u: %s", admin.c_str(), status, body.c_str());
      if (args.once || args.json || first) return 1;
    } else if (args.json) {
      std::fwrite(body.data(), 1, body.size(), stdout);
      return 0;
    } else {
      bson_error_t bsonError;
      bson_t* doc = bson_new_from_json(reinterpret_cast<const uint8_t*>(body.data()), static_cast<ssize_t>(body.size()),
                                       &bsonError);
      if (!doc) {
        std::fprintf(stderr, "shardscope stats: /stats is not valid JSON: %s\n", bsonError.message);
        return 1;
      }
      if (tty && !args.once) std::fputs("\033[H\033[2J", stdout);  // redraw in place
      else if (!first) std::fputs("\n", stdout);
      printTable(doc, args);
      bson_destroy(doc);
      if (args.once) return 0;
    }
    std::this_thread::sleep_for(std::chrono::duration<double>(args.interval));
  }
}

}  // namespace shardscope::cli
