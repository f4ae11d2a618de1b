// The mongos pool's bookkeeping: which host a new connection tries first, backoff, probes.
#include "proxy/mongos_pool.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <map>

namespace shardscope::proxy {
namespace {

using std::chrono::microseconds;
using std::chrono::milliseconds;

bool contains(const std::vector<size_t>& v, size_t i) { return std::find(v.begin(), v.end(), i) != v.end(); }

TEST(MongosPool, UntriedHostsInSeedOrder) {
  MongosPool p({"a:1", "b:2", "c:3"}, MongosPool::Options{});
  EXPECT_EQ(p.connectOrder(), (std::vector<size_t>{0, 1, 2}));
  EXPECT_FALSE(p.anyUp());
}

TEST(MongosPool, AFailedHostGoesLastAndIsRetriedAfterABackoffThatDoubles) {
  MongosPool p({"a:1", "b:2", "c:3"}, MongosPool::Options{});
  auto t0 = MongosPool::Clock::now();
  p.recordFailure(0, "connect failed: Connection refused", t0);
  EXPECT_EQ(p.connectOrder(t0), (std::vector<size_t>{1, 2, 0}));
  EXPECT_FALSE(contains(p.dueForProbe(t0 + milliseconds(100)), 0));  // backoff 250 ms
  EXPECT_TRUE(contains(p.dueForProbe(t0 + milliseconds(260)), 0));
  EXPECT_FALSE(contains(p.dueForProbe(t0 + milliseconds(300)), 0));  // handed out once until its result
  p.recordFailure(0, "connect failed: Connection refused", t0);
  EXPECT_FALSE(contains(p.dueForProbe(t0 + milliseconds(400)), 0));  // second failure: 500 ms
  EXPECT_TRUE(contains(p.dueForProbe(t0 + milliseconds(510)), 0));
  EXPECT_EQ(p.snapshot()[0].last_error, "connect failed: Connection refused");
  EXPECT_EQ(p.snapshot()[0].consecutive_failures, 2u);
}

TEST(MongosPool, BackoffIsCapped) {
  MongosPool::Options o;
  o.backoff_max = milliseconds(1000);
  MongosPool p({"a:1"}, o);
  auto t0 = MongosPool::Clock::now();
  for (int i = 0; i < 40; ++i) p.recordFailure(0, "x", t0);
  EXPECT_TRUE(p.dueForProbe(t0 + milliseconds(990)).empty());
  EXPECT_EQ(p.dueForProbe(t0 + milliseconds(1010)).size(), 1u);
}

TEST(MongosPool, AHostThatComesBackIsUsedAgain) {
  MongosPool p({"a:1", "b:2"}, MongosPool::Options{});
  p.recordFailure(0, "refused");
  p.recordSuccess(1, microseconds(300));
  EXPECT_EQ(p.connectOrder().front(), 1u);
  p.recordSuccess(0, microseconds(300));
  EXPECT_EQ(p.snapshot()[0].consecutive_failures, 0u);
  std::map<size_t, int> first;
  for (int i = 0; i < 1000; ++i) ++first[p.connectOrder().front()];
  EXPECT_GT(first[0], 100);  // random within the window: ~500 of 1000
}

TEST(MongosPool, NewConnectionsSpreadOverTheLatencyWindowOnly) {
  MongosPool p({"near1:1", "far:2", "near2:3"}, MongosPool::Options{});  // window 15 ms
  p.recordSuccess(0, microseconds(1'000));
  p.recordSuccess(1, microseconds(40'000));
  p.recordSuccess(2, microseconds(9'000));
  std::map<size_t, int> first;
  for (int i = 0; i < 1000; ++i) {
    auto order = p.connectOrder();
    ASSERT_EQ(order.size(), 3u);
    EXPECT_EQ(order.back(), 1u);  // outside the window: only after both near hosts failed
    ++first[order.front()];
  }
  EXPECT_GT(first[0], 100);  // ~500 each
  EXPECT_GT(first[2], 100);
  EXPECT_EQ(first.count(1), 0u);
}

TEST(MongosPool, SummaryAndJsonNameEachHostsState) {
  MongosPool p({"a:1", "b:2", "c:3"}, MongosPool::Options{});
  p.recordSuccess(1, microseconds(500));
  p.recordFailure(2, "TLS handshake failed: certificate verify failed: self-signed certificate");
  EXPECT_EQ(p.summary(),
            "mongos up: b:2; down: c:3 (TLS handshake failed: certificate verify failed: self-signed certificate); "
            "not tried yet: a:1");
  auto json = p.renderJson();
  EXPECT_NE(json.find("\"address\":\"c:3\",\"state\":\"down\""), std::string::npos) << json;
  EXPECT_NE(json.find("\"address\":\"b:2\",\"state\":\"up\""), std::string::npos) << json;
}

TEST(MongosPool, AnSrvRescanRetiresDroppedHostsAndAddsNewOnesWithStableIndexes) {
  using E = MongosPool::Endpoint;
  MongosPool p(std::vector<E>{{"a", 1, {}}, {"b", 2, "10.0.0.2"}}, MongosPool::Options{});
  p.recordSuccess(0, microseconds(100));
  p.recordSuccess(1, microseconds(100));
  EXPECT_FALSE(p.setHosts({{"a", 1, {}}, {"b", 2, "10.0.0.2"}}));  // unchanged
  EXPECT_TRUE(p.setHosts({{"b", 2, "10.0.0.2"}, {"c", 3, {}}}));
  EXPECT_EQ(p.size(), 3u);  // "a" retired, not erased: a connect in flight may still record on index 0
  EXPECT_EQ(p.endpoint(2).name, "c");
  EXPECT_EQ(p.endpoint(1).ip, "10.0.0.2");
  EXPECT_EQ(p.connectOrder(), (std::vector<size_t>{1, 2}));
  EXPECT_FALSE(contains(p.dueForProbe(MongosPool::Clock::now() + std::chrono::hours(1)), 0));
  EXPECT_EQ(p.summary(), "mongos up: b:2; not tried yet: c:3");
  EXPECT_EQ(p.endpoints().size(), 2u);
  p.recordSuccess(0, microseconds(100));  // late result for the retired host: harmless
  EXPECT_EQ(p.snapshot().size(), 2u);
  // Listed again: back, as a host not tried yet.
  EXPECT_TRUE(p.setHosts({{"a", 1, {}}}));
  EXPECT_EQ(p.connectOrder(), (std::vector<size_t>{0}));
  EXPECT_FALSE(p.anyUp());
}

}  // namespace
}  // namespace shardscope::proxy
