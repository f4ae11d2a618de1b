// common/name_text.h: how every output shows a client's name, and /metrics keeping names that had
// to be altered apart (two series with the same labels lose samples in Prometheus).
#include "common/name_text.h"

#include <gtest/gtest.h>

#include <set>
#include <sstream>
#include <string>

#include "common/bounded_name.h"
#include "common/utf8.h"
#include "stats/render.h"
#include "stats/snapshot.h"

namespace shardscope::stats {
namespace {

std::string hashOf(std::string_view raw) {
  std::string h;
  common::appendNameHash(raw, h);
  return h;
}

TEST(NameText, Utf8NamesAreKeptOthersReplacedAndHashed) {
  EXPECT_EQ(common::utf8Name("shop.orders"), "shop.orders");
  EXPECT_EQ(common::utf8Name("caf\xC3\xA9"), "caf\xC3\xA9");
  const std::string ff = common::utf8Name("bad\xff"), fe = common::utf8Name("bad\xfe");
  EXPECT_EQ(ff, "bad\xEF\xBF\xBD" + hashOf("bad\xff"));
  EXPECT_NE(ff, fe);
  EXPECT_TRUE(common::isValidUtf8(ff));
}

TEST(NameText, TextNamesAreOnePrintableLine) {
  EXPECT_EQ(common::textName("shop.orders"), "shop.orders");
  EXPECT_EQ(common::textName("x\nshop.forged\r\t\x1b[2J\x7f"), "x\\nshop.forged\\r\\t\\x1b[2J\\x7f");
  EXPECT_EQ(common::textName(std::string("a\0b", 3)), "a\\x00b");
  EXPECT_EQ(common::textName("inv\xff"), "inv\xEF\xBF\xBD" + hashOf("inv\xff"));
}

TEST(NameText, C1ControlsAreEscapedToo) {
  // U+009B is CSI: some terminals obey "\xC2\x9B" + "2J" as ESC [ 2 J.
  EXPECT_EQ(common::textName("a\xC2\x9B" "2J\xC2\x85z\xC2\xA0"), "a\\u009b2J\\u0085z\xC2\xA0");
  EXPECT_EQ(common::printableText("line 1 \x7f\xC2\x9B\nline 2\x1b\n"), "line 1 \\x7f\\u009b\nline 2\\x1b\n");
  EXPECT_EQ(common::printableText("caf\xC3\xA9\n"), "caf\xC3\xA9\n");
}

TEST(NameText, HiddenCharactersAreEscapedSoANameReadsAsItsBytes) {
  // Trojan Source (CVE-2021-42574): "inv" RLO "slx.eciovni" displays as "invoice.xls" in bidi text.
  EXPECT_EQ(common::textName("shop.inv\xE2\x80\xAE" "slx.eciovni"), "shop.inv\\u202eslx.eciovni");
  // Isolates, zero-width space and joiner, a BOM, a line separator, a soft hyphen, a tag character.
  EXPECT_EQ(common::textName("a\xE2\x81\xA6" "b\xE2\x81\xA9" "c\xE2\x80\x8B" "d\xE2\x80\x8D" "e\xEF\xBB\xBF" "f"),
            "a\\u2066b\\u2069c\\u200bd\\u200de\\ufefff");
  EXPECT_EQ(common::textName("x\xE2\x80\xA8y\xC2\xAD" "z\xF3\xA0\x81\x81"), "x\\u2028y\\u00adz\\U000e0041");
  // The same in whole reports (printableText), newlines kept; visible characters untouched.
  EXPECT_EQ(common::printableText("ns a\xE2\x80\xAE" "b\n\xC2\xA0\xE2\x82\xAC\n"), "ns a\\u202eb\n\xC2\xA0\xE2\x82\xAC\n");
  const std::string visible = "caf\xC3\xA9 \xE2\x80\xAF \xF0\x9F\x98\x80 \xE4\xB8\xAD";
  EXPECT_EQ(common::textName(visible), visible);
}

TEST(NameText, TruncationNeverCutsACharacter) {
  EXPECT_EQ(common::truncateUtf8("short", 28, "~"), "short");
  for (size_t shift = 0; shift < 4; ++shift) {
    std::string s(shift, 'x');
    for (int i = 0; i < 40; ++i) s += "\xC3\xA9";
    for (size_t max = 2; max < 40; ++max) {
      const std::string cut = common::truncateUtf8(s, max, "~");
      EXPECT_TRUE(common::isValidUtf8(cut)) << shift << " " << max;
      EXPECT_LE(cut.size(), max);
    }
  }
  EXPECT_EQ(common::utf8Prefix("\xE2\x82\xAC\xE2\x82\xAC", 5), "\xE2\x82\xAC");
}

TEST(RenderPrometheus, AlteredNamesStayDistinctSeries) {
  Snapshot snap;
  snap.prometheusTopShapes = 100;
  snap.prometheusTopPairs = 100;
  int i = 0;
  for (const char* ns : {"db.dup\x01", "db.dup\x02", "db.dup\xff", "db.dup\xfe"}) {
    ShapeSnapshot s;
    s.hash = 100 + i++;
    s.ns = ns;
    s.command = ns + 3;  // a command named like the collection
    s.shape = "-";
    s.counters.count = 10;
    s.counters.byTargeting[static_cast<size_t>(routing::Targeting::Unsharded)] = 10;
    snap.shapes.push_back(s);
  }
  const std::string page = renderPrometheus(snap, {});
  ASSERT_TRUE(common::isValidUtf8(page));
  std::set<std::string> series;
  std::istringstream lines(page);
  for (std::string line; std::getline(lines, line);) {
    if (line.empty() || line[0] == '#') continue;
    EXPECT_TRUE(series.insert(line.substr(0, line.rfind(' '))).second) << "duplicate series: " << line;
  }
  EXPECT_NE(page.find("ns=\"db.dup\xEF\xBF\xBD" + hashOf("db.dup\xff") + "\""), std::string::npos) << page;
}

}  // namespace
}  // namespace shardscope::stats
