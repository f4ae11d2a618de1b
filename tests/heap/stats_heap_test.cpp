// The statistics catalog as the allocator sees it: what a client names, and how many shapes it
// sends, leave the heap bounded after the client has gone (plain allocator only: heap_in_use.h).
// The counts and caps of the same workloads are asserted in tests/stats/ (sanitized unit tests).
#include <gtest/gtest.h>

#include <string>

#include "stats/registry.h"
#include "tests/heap/heap_in_use.h"

namespace shardscope::stats {
namespace {

using shardscope::testing::heapInUse;

// A command view of {<name>: <collection>, $db: <db>, filter: <filter>}.
struct RawCommand {
  RawCommand(std::string name, std::string collection, std::string db, const std::string& filterField = "")
      : name_(std::move(name)), collection_(std::move(collection)), db_(std::move(db)) {
    bson_init(&body_);
    bson_append_utf8(&body_, name_.c_str(), -1, collection_.data(), static_cast<int>(collection_.size()));
    if (!filterField.empty()) {
      bson_t filter;
      bson_append_document_begin(&body_, "filter", -1, &filter);
      bson_append_int32(&filter, filterField.c_str(), -1, 1);
      bson_append_document_end(&body_, &filter);
    }
    bson_append_utf8(&body_, "$db", -1, db_.c_str(), -1);
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

routing::TargetResult target(routing::Targeting t) {
  routing::TargetResult r;
  r.targeting = t;
  return r;
}

// 100,000 distinct shapes into one namespace: past the catalog's cap they land in `other`, and
// the catalog and its caches stay small.
TEST(StatsHeap, ShapeCapBoundsMemory) {
  StatsOptions options;
  options.max_shapes_per_namespace = 1000;
  Registry registry(options);
  auto rec = registry.newRecorder();
  const size_t before = heapInUse();
  for (int i = 0; i < 100'000; ++i) {
    RawCommand c("find", "events", "shop", "f" + std::to_string(i));
    rec->onReply(rec->onRequest(c.view, "shop.events", target(routing::Targeting::Broadcast), 10), protocol::ReplyFacts{}, 10, 1000);
  }
  const size_t grown = heapInUse() - before;
  EXPECT_EQ(registry.snapshot().totals.ops, 100'000u);
  EXPECT_LT(grown, 8u * 1024 * 1024) << "catalog and caches should stay small";
}

// Issue 28 item 1: 300 finds on distinct 32 KB collection names and 200 distinct 32 KB command
// names (16 MB sent) leave less than 1 MiB once the client has gone.
TEST(StatsHeap, LongClientNamesAreKeptBoundedInBytes) {
  Registry registry;
  const size_t before = heapInUse();
  size_t sent = 0;
  {
    auto rec = registry.newRecorder();
    for (int i = 0; i < 300; ++i) {
      RawCommand find("find", "c" + std::to_string(i) + std::string(32 * 1024, 'x'), "shop");
      rec->onReply(rec->onRequest(find.view, find.ns(), target(routing::Targeting::Unsharded), 100), protocol::ReplyFacts{}, 100, 1000);
      sent += 32 * 1024;
    }
    for (int i = 0; i < 200; ++i) {
      RawCommand cmd("cmd" + std::to_string(i) + std::string(32 * 1024, 'y'), "", "shop");
      rec->onReply(rec->onRequest(cmd.view, "", target(routing::Targeting::Unsharded), 100), protocol::ReplyFacts{}, 100, 1000);
      sent += 32 * 1024;
    }
  }  // the client leaves
  const size_t kept = heapInUse() - before;
  EXPECT_EQ(registry.snapshot().totals.ops, 500u);
  EXPECT_LT(kept, 1u << 20) << "the catalog keeps " << kept << " bytes of names after " << sent << " bytes sent";
}

}  // namespace
}  // namespace shardscope::stats
