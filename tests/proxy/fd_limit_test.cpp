// The client-connection cap derived from the open-file limit (issue 14 item 7).
#include "proxy/fd_limit.h"

#include <gtest/gtest.h>

namespace shardscope::proxy {
namespace {

TEST(FdLimit, TwoDescriptorsPerClientAfterTheReserve) {
  EXPECT_EQ(connectionCapFor(256, 20000), 64u);           // (256 - 128) / 2
  EXPECT_EQ(connectionCapFor(1024, 20000), 448u);         // a default soft limit
  EXPECT_EQ(connectionCapFor(1u << 20, 20000), 20000u);   // the configured cap when it fits
  EXPECT_EQ(connectionCapFor(100, 20000), 1u);            // never zero
  EXPECT_EQ(connectionCapFor(UINT64_MAX, 5), 5u);         // unlimited
}

TEST(FdLimit, RaisesTheSoftLimitToTheHardOne) {
  FdBudget b = raiseFdLimit(20000);
  EXPECT_GT(b.limit, 0u);
  EXPECT_EQ(b.connections, connectionCapFor(b.limit, 20000));
}

}  // namespace
}  // namespace shardscope::proxy
