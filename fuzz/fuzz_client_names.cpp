// libFuzzer: whatever a client names ($db, collection, command, field names), through the
// statistics catalog into every page that shows it (issue 28). Input: OP_MSG sections, decoded as
// the proxy decodes them. One registry lives across inputs (small caps, so the `other` buckets and
// the series cap are reached). Invariants: names are kept at most 128 bytes; /metrics has only
// valid label values (strict UTF-8, the text format's escapes, no control character) and bounded
// lines; /stats is JSON in strict UTF-8.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <string>
#include <string_view>

#include "common/bounded_name.h"
#include "common/utf8.h"
#include "fuzz/fuzz_support.h"
#include "stats/registry.h"
#include "stats/render.h"

using namespace shardscope;

namespace {

[[noreturn]] void fail(const char* what, std::string_view text) {
  fprintf(stderr, "%s:\n%.*s\n", what, static_cast<int>(std::min<size_t>(text.size(), 4096)), text.data());
  __builtin_trap();
}

// One sample line: name{label="value",...} number. Values may hold only the three escapes.
bool isSampleLine(std::string_view line) {
  size_t brace = line.find('{');
  if (brace == std::string_view::npos) return line.find(' ') != std::string_view::npos;
  size_t i = brace + 1;
  while (i < line.size() && line[i] != '}') {
    size_t eq = line.find("=\"", i);
    if (eq == std::string_view::npos) return false;
    for (i = eq + 2; i < line.size() && line[i] != '"'; ++i) {
      auto c = static_cast<unsigned char>(line[i]);
      if (c < 0x20 || c == 0x7F) return false;
      if (c == '\\' && (++i == line.size() || (line[i] != '\\' && line[i] != '"' && line[i] != 'n'))) return false;
    }
    if (i == line.size()) return false;
    ++i;  // closing quote
    if (i < line.size() && line[i] == ',') ++i;
  }
  return i < line.size() && line.substr(i).starts_with("} ");
}

void checkMetrics(const std::string& page) {
  if (!common::isValidUtf8(page)) fail("/metrics is not UTF-8", page);
  size_t start = 0;
  while (start < page.size()) {
    size_t end = page.find('\n', start);
    if (end == std::string::npos) fail("/metrics does not end in a newline", page.substr(start));
    std::string_view line(page.data() + start, end - start);
    // Label values: names at most 128 bytes (x3 for U+FFFD), a shape at most ~4 KB escaped.
    if (line.size() > 64 * 1024) fail("/metrics line too long", line);
    if (!line.starts_with("#") && !isSampleLine(line)) fail("invalid /metrics line", line);
    start = end + 1;
  }
}

stats::Registry& registry() {
  static stats::Registry r([] {
    stats::StatsOptions o;
    o.max_namespaces = 8;
    o.max_shapes_per_namespace = 8;
    o.max_shapes_total = 32;
    o.prometheus_top_shapes = 4;
    o.prometheus_top_pairs = 6;
    return o;
  }());
  return r;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::vector<uint8_t> frame;
  protocol::OpMsg msg;
  protocol::CommandView view;
  if (!fuzz::decodeSections({data, size}, frame, msg, view)) return 0;
  std::string nsBuffer;
  const std::string_view ns = view.ns(nsBuffer);
  if (common::boundedName(ns).size() > common::kMaxKeptNameBytes) fail("bounded name too long", ns);

  auto recorder = registry().newRecorder();
  routing::TargetResult target;
  target.targeting = routing::Targeting::Unsharded;
  recorder->onReply(recorder->onRequest(view, ns, target, static_cast<uint32_t>(size)), protocol::ReplyFacts{}, 16, 1000);
  recorder.reset();  // folded into the registry, as when a client leaves

  const stats::Snapshot snap = registry().snapshot();
  for (const auto& s : snap.shapes)
    if (s.ns.size() > common::kMaxKeptNameBytes || s.command.size() > common::kMaxKeptNameBytes)
      fail("a name kept whole", s.ns.size() > s.command.size() ? s.ns : s.command);
  if (snap.shapesTracked > 32 + 1024 + 1) fail("catalog past its caps", "");
  checkMetrics(stats::renderPrometheus(snap, {}));
  const std::string json = stats::renderJson(snap, {});
  if (!fuzz::isJson(json) || !common::isValidUtf8(json)) fail("/stats is not JSON in UTF-8", json);
  return 0;
}
