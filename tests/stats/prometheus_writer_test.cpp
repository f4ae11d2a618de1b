// The one Prometheus writer (issue 28, item 4): every label value it writes is one the text
// format accepts, whatever bytes a client put in a name.
#include "stats/prometheus_writer.h"

#include <gtest/gtest.h>

#include <string>
#include <string_view>

#include "common/bounded_name.h"
#include "common/utf8.h"

namespace shardscope::stats {
namespace {

TEST(PrometheusWriter, EscapesOrReplacesEveryByteAClientCanSend) {
  auto escaped = [](std::string_view v) {
    std::string out;
    PrometheusWriter::appendEscaped(v, out);
    return out;
  };
  // The format's three escapes.
  EXPECT_EQ(escaped("a\\b\"c\nd"), "a\\\\b\\\"c\\nd");
  // Valid UTF-8 stays as it is, 2-, 3- and 4-byte sequences alike.
  EXPECT_EQ(escaped("caf\xC3\xA9 \xE2\x82\xAC \xF0\x9F\x98\x80"), "caf\xC3\xA9 \xE2\x82\xAC \xF0\x9F\x98\x80");
  const std::string fffd = "\xEF\xBF\xBD";
  // A value that lost bytes ends with the hash of what it was (common::appendNameHash).
  auto lost = [](std::string_view raw, const std::string& shown) {
    std::string h;
    common::appendNameHash(raw, h);
    return shown + h;
  };
  // Bytes FF FE, a NUL, CR, ESC and DEL.
  EXPECT_EQ(escaped(std::string("db\xFF\xFE", 4)), lost(std::string("db\xFF\xFE", 4), "db" + fffd + fffd));
  EXPECT_EQ(escaped(std::string("a\0b\rc\x1B\x7F", 7)),
            lost(std::string("a\0b\rc\x1B\x7F", 7), "a" + fffd + "b" + fffd + "c" + fffd + fffd));
  // What a lax decoder lets through and Go's strict one (promtool, Prometheus) refuses: overlong
  // forms, UTF-16 surrogates, code points past U+10FFFF, truncated and stray continuation bytes.
  EXPECT_EQ(escaped("\xC0\x80"), lost("\xC0\x80", fffd + fffd));
  EXPECT_EQ(escaped("\xE0\x80\xAF"), lost("\xE0\x80\xAF", fffd + fffd + fffd));
  EXPECT_EQ(escaped("\xED\xA0\x80"), lost("\xED\xA0\x80", fffd + fffd + fffd));
  EXPECT_EQ(escaped("\xF4\x90\x80\x80"), lost("\xF4\x90\x80\x80", fffd + fffd + fffd + fffd));
  EXPECT_EQ(escaped("x\xE2\x82"), lost("x\xE2\x82", "x" + fffd + fffd));
  EXPECT_EQ(escaped("\x80y"), lost("\x80y", fffd + "y"));
}

// Reads `out` as the text format reads a label value: escapes are \\, \" and \n only, no raw quote.
bool isLabelValue(std::string_view out) {
  for (size_t i = 0; i < out.size(); ++i) {
    auto c = static_cast<unsigned char>(out[i]);
    if (c < 0x20 || c == 0x7F || c == '"') return false;
    if (c == '\\') {
      if (i + 1 == out.size() || (out[i + 1] != '\\' && out[i + 1] != '"' && out[i + 1] != 'n')) return false;
      ++i;
    }
  }
  return common::isValidUtf8(out);
}

// Byte pairs of every value, before a cut-off multi-byte sequence: always a valid label value.
TEST(PrometheusWriter, AnyBytesGiveAValidLabelValue) {
  for (int a = 0; a < 256; ++a)
    for (int b = 0; b < 256; ++b) {
      const char raw[] = {static_cast<char>(a), static_cast<char>(b), '\xE2', static_cast<char>(a ^ b)};
      std::string out;
      PrometheusWriter::appendEscaped(std::string_view(raw, sizeof raw), out);
      ASSERT_TRUE(isLabelValue(out)) << a << " " << b;
    }
}

// A label value reads as the bytes it holds: C1 controls (U+009B is CSI to some terminals), bidi
// overrides and isolates (a collection "inv\u202Eslx.eciovni" shows in Grafana as "invoice.xls"),
// zero-width and line-separator characters are replaced as the C0 controls are, and hashed.
TEST(PrometheusWriter, HiddenCharactersAreReplacedNotShown) {
  auto escaped = [](std::string_view v) {
    std::string out;
    PrometheusWriter::appendEscaped(v, out);
    return out;
  };
  auto lost = [](std::string_view raw, const std::string& shown) {
    std::string h;
    common::appendNameHash(raw, h);
    return shown + h;
  };
  const std::string fffd = "\xEF\xBF\xBD";
  for (std::string_view hidden : {"\xC2\x9B", "\xC2\x85", "\xE2\x80\xAE", "\xE2\x81\xA6", "\xE2\x80\x8B", "\xE2\x80\x8D",
                                  "\xE2\x80\xA8", "\xEF\xBB\xBF", "\xC2\xAD", "\xF3\xA0\x81\x81"}) {
    const std::string raw = "inv" + std::string(hidden) + "x";
    EXPECT_EQ(escaped(raw), lost(raw, "inv" + fffd + "x")) << raw;
  }
  // Their visible neighbours stay: NBSP, a narrow NBSP, an accented letter, an emoji.
  const std::string visible = "a\xC2\xA0" "b\xE2\x80\xAF\xC3\xA9\xF0\x9F\x98\x80";
  EXPECT_EQ(escaped(visible), visible);
}

}  // namespace
}  // namespace shardscope::stats
