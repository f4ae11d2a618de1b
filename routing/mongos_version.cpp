#include "routing/mongos_version.h"

#include <atomic>
#include <charconv>

namespace shardscope::routing {
namespace {

// major * 1000 + minor; 0 = unknown. Atomics: the learned value is written by a session thread and
// read by every targeting call.
std::atomic<int> g_configured{0};
std::atomic<int> g_learned{0};

int pack(MongosVersion v) { return v.known() ? v.major * 1000 + v.minor : 0; }
MongosVersion unpack(int p) { return p ? MongosVersion{p / 1000, p % 1000} : MongosVersion{}; }

bool number(std::string_view s, int& out) {
  if (s.empty() || s.size() > 4) return false;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), out);
  return ec == std::errc() && end == s.data() + s.size();
}

MongosVersion fromWireVersionClamped(int64_t w) {
  return MongosVersion::fromWireVersion(static_cast<int32_t>(w < 0 ? 0 : w > 1000 ? 1000 : w));
}

}  // namespace

bool MongosVersion::parse(std::string_view text, MongosVersion& out) {
  size_t dot = text.find('.');
  int maj = 0, min = 0;
  if (!number(text.substr(0, dot), maj) || maj < 1 || maj > 99) return false;
  if (dot != std::string_view::npos) {
    std::string_view rest = text.substr(dot + 1);
    size_t dot2 = rest.find('.');
    if (!number(rest.substr(0, dot2), min) || min > 99) return false;
    int patch = 0;
    if (dot2 != std::string_view::npos && !number(rest.substr(dot2 + 1), patch)) return false;
  }
  out = {maj, min};
  return true;
}

MongosVersion MongosVersion::fromWireVersion(int32_t w) {
  if (w >= 25) return {8, w - 25};  // 25 = 8.0, 26 = 8.1, ...
  if (w >= 21) return {7, w - 21};  // 21 = 7.0, 22 = 7.1, 23 = 7.2, 24 = 7.3
  if (w >= 17) return {6, w - 17};  // 17 = 6.0 ... 20 = 6.3
  if (w >= 13) return {5, 0};       // 13 = 5.0 ... 16 = 5.3
  if (w >= 1) return {4, 4};        // 4.4 and older: the pre-7.1 rules either way
  return {};
}

MongosVersion MongosVersion::fromReply(const bson_t& reply) {
  bson_iter_t it;
  MongosVersion v;
  if (bson_iter_init_find(&it, &reply, "version") && BSON_ITER_HOLDS_UTF8(&it)) {
    uint32_t len = 0;
    const char* s = bson_iter_utf8(&it, &len);
    std::string_view text(s, len);
    // "7.0.12-rc1", "8.0.0-alpha": the numeric part.
    size_t end = text.find_first_not_of("0123456789.");
    if (parse(text.substr(0, end), v)) return v;
  }
  if (bson_iter_init_find(&it, &reply, "maxWireVersion") && BSON_ITER_HOLDS_NUMBER(&it))
    return fromWireVersionClamped(bson_iter_as_int64(&it));
  return {};
}

void setConfiguredMongosVersion(MongosVersion v) { g_configured.store(pack(v), std::memory_order_relaxed); }
void noteLearnedMongosVersion(MongosVersion v) { g_learned.store(pack(v), std::memory_order_relaxed); }
bool learnMongosVersionFromHello(const bson_t& reply) {
  bson_iter_t it;
  if (!bson_iter_init_find(&it, &reply, "msg") || !BSON_ITER_HOLDS_UTF8(&it) ||
      std::string_view(bson_iter_utf8(&it, nullptr)) != "isdbgrid" || !bson_iter_init_find(&it, &reply, "maxWireVersion") ||
      !BSON_ITER_HOLDS_NUMBER(&it))
    return false;
  MongosVersion v = fromWireVersionClamped(bson_iter_as_int64(&it));
  if (!v.known()) return false;
  noteLearnedMongosVersion(v);
  return true;
}

MongosVersion effectiveMongosVersion() {
  int c = g_configured.load(std::memory_order_relaxed);
  return unpack(c ? c : g_learned.load(std::memory_order_relaxed));
}

}  // namespace shardscope::routing
