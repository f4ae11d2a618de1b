// 'Rescued' is one definition (stats/rescued_share.h) behind /stats' per-shape and per-rule figures:
// rewritten minus fell back, never below zero, of the lookups given; no lookups: no number.
#include <gtest/gtest.h>

#include <string>

#include "stats/rescued_share.h"

namespace shardscope::stats {
namespace {

std::string rescuedJsonOf(uint64_t rewritten, uint64_t fell_back, uint64_t lookups) {
  std::string out;
  common::JsonWriter w(out);
  w.beginObject();
  writeRescued(w, rescuedShare(rewritten, fell_back, lookups));
  w.endObject();
  return out;
}

TEST(RescuedShare, RewrittenAndKeptOfTheLookups) {
  EXPECT_EQ(rescuedJsonOf(40, 0, 60), R"({"rescued":40,"rescuedShare":0.6666666666666666})");
  EXPECT_EQ(rescuedJsonOf(40, 10, 60), R"({"rescued":30,"rescuedShare":0.5})");
  EXPECT_EQ(rescuedJsonOf(3, 5, 8), R"({"rescued":0,"rescuedShare":0})");  // more fallbacks than rewrites: none
  EXPECT_EQ(rescuedJsonOf(0, 0, 0), R"({"rescued":0,"rescuedShare":null})");  // unknown, not 0%
}

}  // namespace
}  // namespace shardscope::stats
