// Issue 28, item 1: what a client names is kept bounded in bytes (the statistics catalog, its
// `other` buckets, the per-(ns, command) series of /metrics), whatever the client sends.
#include <gtest/gtest.h>

#include <algorithm>
#include <set>
#include <sstream>
#include <string>

#include "common/bounded_name.h"
#include "common/utf8.h"
#include "stats/registry.h"
#include "stats/render.h"

namespace shardscope::stats {
namespace {

using common::kMaxKeptNameBytes;

// A command view of {<name>: <collection>, $db: <db>}: names with any bytes, as a client can send.
struct RawCommand {
  RawCommand(std::string name, std::string collection, std::string db)
      : name_(std::move(name)), collection_(std::move(collection)), db_(std::move(db)) {
    bson_init(&body_);
    bson_append_utf8(&body_, name_.c_str(), -1, collection_.data(), static_cast<int>(collection_.size()));
    view.body = body_;
    view.setName(name_);
    view.collection = collection_;
    view.db = db_;
  }
  ~RawCommand() { bson_destroy(&body_); }
  std::string ns() const { return db_ + "." + collection_; }
  protocol::CommandView view;

 private:
  std::string name_, collection_, db_;
  bson_t body_;
};

routing::TargetResult unsharded() {
  routing::TargetResult r;
  r.targeting = routing::Targeting::Unsharded;
  return r;
}

size_t longestLine(const std::string& text) {
  size_t longest = 0;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) longest = std::max(longest, line.size());
  return longest;
}

TEST(BoundedName, ShortNamesAreKeptLongOnesBecomePrefixAndHash) {
  EXPECT_EQ(common::boundedName("shop.orders"), "shop.orders");
  const std::string limit(kMaxKeptNameBytes, 'a');
  EXPECT_EQ(common::boundedName(limit), limit);

  const std::string a = "shop." + std::string(32 * 1024, 'x') + "a";
  const std::string b = "shop." + std::string(32 * 1024, 'x') + "b";
  const std::string boundedA = common::boundedName(a);
  EXPECT_LE(boundedA.size(), kMaxKeptNameBytes);
  EXPECT_TRUE(boundedA.starts_with("shop.xxx")) << boundedA;
  EXPECT_NE(boundedA.find("...#"), std::string::npos) << boundedA;
  EXPECT_EQ(common::boundedName(a), boundedA) << "the same name always gives the same text";
  EXPECT_NE(common::boundedName(b), boundedA) << "names that differ past the prefix stay apart";

  // The cut never splits a UTF-8 sequence: 31 ASCII bytes, then 3-byte characters across byte 32.
  std::string wide = std::string(31, 'x');
  while (wide.size() < 300) wide += "\xE2\x82\xAC";  // EURO SIGN
  std::string boundedWide = common::boundedName(wide);
  EXPECT_TRUE(common::isValidUtf8(boundedWide)) << boundedWide;
}

// The issue's case: 300 finds on distinct 32 KB collection names and 200 distinct 32 KB command
// names. Before: every name kept whole (catalog, namespace index, command set), and /metrics
// declared 810 MB, 49 times what the client sent.
TEST(Registry, LongClientNamesAreKeptBoundedInBytes) {
  Registry registry;
  {
    auto rec = registry.newRecorder();
    for (int i = 0; i < 300; ++i) {
      RawCommand find("find", "c" + std::to_string(i) + std::string(32 * 1024, 'x'), "shop");
      rec->onReply(rec->onRequest(find.view, find.ns(), unsharded(), 100), protocol::ReplyFacts{}, 100, 1000);
    }
    for (int i = 0; i < 200; ++i) {
      RawCommand cmd("cmd" + std::to_string(i) + std::string(32 * 1024, 'y'), "", "shop");
      rec->onReply(rec->onRequest(cmd.view, "", unsharded(), 100), protocol::ReplyFacts{}, 100, 1000);
    }
  }  // the client leaves

  Snapshot snap = registry.snapshot();
  for (const auto& ns : snap.namespaces) EXPECT_LE(ns.ns.size(), kMaxKeptNameBytes);
  std::set<std::string> commands;
  for (const auto& s : snap.shapes) {
    EXPECT_LE(s.ns.size(), kMaxKeptNameBytes);
    EXPECT_LE(s.command.size(), kMaxKeptNameBytes);
    commands.insert(s.command);
  }
  EXPECT_EQ(commands.size(), 201u) << "distinct long names stay distinct (200 commands and find)";
  EXPECT_EQ(snap.totals.ops, 500u);

  const std::string page = registry.renderPrometheus({});
  EXPECT_LT(page.size(), 2u << 20) << "bounded in total";
  EXPECT_LT(longestLine(page), 512u) << "bounded per series";
  const std::string json = registry.renderJson({});
  EXPECT_LT(json.size(), 2u << 20);
}

// Past the shape caps, `other` buckets are per (namespace, command), and bounded in number too:
// 256 namespaces x 16 commands would otherwise be 4,096 buckets (and series pairs).
TEST(Registry, OtherBucketsAreBoundedInNumber) {
  StatsOptions options;
  options.max_shapes_total = 16;
  Registry registry(options);
  auto rec = registry.newRecorder();
  for (int n = 0; n < 256; ++n)
    for (int c = 0; c < 16; ++c) {
      RawCommand cmd("cmd" + std::to_string(c), "coll" + std::to_string(n), "db");
      rec->onRequest(cmd.view, cmd.ns(), unsharded(), 1);
    }
  Snapshot snap = registry.snapshot();
  EXPECT_LE(snap.shapesTracked, 16u + 1024u + 1u);
  EXPECT_EQ(snap.totals.ops, 4096u);
  uint64_t counted = 0;
  for (const auto& s : snap.shapes) counted += s.counters.count;
  EXPECT_EQ(counted, 4096u) << "every operation is still counted somewhere";
}

// Only the busiest (ns, command) pairs get series of their own; the rest are summed as <other>,
// so the counts still add up.
TEST(RenderPrometheus, PairsPastTheTopAreSummedAsOther) {
  Snapshot snap;
  snap.prometheusTopShapes = 100;
  snap.prometheusTopPairs = 2;
  for (int i = 0; i < 5; ++i) {
    ShapeSnapshot s;
    s.hash = 100 + i;
    s.ns = "db.c" + std::to_string(i);
    s.command = "find";
    s.shape = "-";
    s.counters.count = 10 * (i + 1);
    s.counters.byTargeting[static_cast<size_t>(routing::Targeting::Unsharded)] = 10 * (i + 1);
    snap.shapes.push_back(s);
  }
  const std::string page = renderPrometheus(snap, {});
  EXPECT_NE(page.find("shardscope_ops_total{ns=\"db.c4\",command=\"find\",targeting=\"unsharded\"} 50"),
            std::string::npos)
      << page;
  EXPECT_NE(page.find("shardscope_ops_total{ns=\"db.c3\",command=\"find\",targeting=\"unsharded\"} 40"),
            std::string::npos);
  EXPECT_EQ(page.find("shardscope_ops_total{ns=\"db.c2\""), std::string::npos);
  EXPECT_NE(page.find("shardscope_ops_total{ns=\"<other>\",command=\"<other>\",targeting=\"unsharded\"} 60"),
            std::string::npos)
      << page;
}

// A database and a command a client calls "<other>" are its own names, not the overflow bucket:
// before, its operations were counted under ns="<other>", command="<other>" in /metrics, the series
// the pairs past the top are summed into, and the namespace took every shape as an `other` bucket.
TEST(Registry, ClientNamesEqualToTheBucketsNamesStayApart) {
  EXPECT_EQ(common::boundedName("<other>").rfind("<other>#", 0), 0u) << common::boundedName("<other>");
  EXPECT_NE(common::boundedName("<other>"), "<other>");
  EXPECT_NE(common::boundedName("<unparsed>"), "<unparsed>");
  EXPECT_EQ(common::boundedName("<other>x"), "<other>x") << "only the buckets' exact names are reserved";

  StatsOptions options;
  options.prometheus_top_pairs = 2;
  Registry registry(options);
  auto rec = registry.newRecorder();
  RawCommand theirs("<other>", "", "<other>");  // {"<other>": "", $db: "<other>"}: ns and command "<other>"
  for (int i = 0; i < 5; ++i) rec->onRequest(theirs.view, "", unsharded(), 1);
  RawCommand find("find", "c", "db");
  for (int i = 0; i < 3; ++i) rec->onRequest(find.view, find.ns(), unsharded(), 1);
  RawCommand rare("count", "c", "db");  // third pair: past the top 2, summed as <other>
  rec->onRequest(rare.view, rare.ns(), unsharded(), 1);

  Snapshot snap = registry.snapshot();
  for (const auto& s : snap.shapes) {
    EXPECT_FALSE(s.other) << s.ns << " " << s.command << ": the client's namespace is not the overflow namespace";
    EXPECT_NE(s.ns, "<other>");
    EXPECT_NE(s.command, "<other>");
  }
  const std::string page = registry.renderPrometheus({});
  EXPECT_NE(page.find("shardscope_ops_total{ns=\"<other>\",command=\"<other>\",targeting=\"unsharded\"} 1\n"),
            std::string::npos)
      << "only the pair past the top is summed as <other>\n" << page;
}

}  // namespace
}  // namespace shardscope::stats
