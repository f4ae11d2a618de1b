// common::LightMutex, the lock of a session's statistics and evaluation batch: it excludes (plain
// counters incremented under it by threads that outnumber the CPUs come out exact, so waiters that
// yield still get the lock), and try_lock fails while it is held.
#include "common/light_mutex.h"

#include <gtest/gtest.h>

#include <mutex>
#include <thread>
#include <vector>

namespace shardscope::common {
namespace {

TEST(LightMutex, ExcludesUnderContention) {
  LightMutex mutex;
  uint64_t a = 0, b = 0;  // plain: a torn or lost update shows as a != b or a short total
  constexpr int kThreads = 8, kRounds = 50'000;
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t)
    threads.emplace_back([&] {
      for (int i = 0; i < kRounds; ++i) {
        std::lock_guard lock(mutex);
        ++a;
        b = a;
      }
    });
  for (auto& t : threads) t.join();
  EXPECT_EQ(a, static_cast<uint64_t>(kThreads) * kRounds);
  EXPECT_EQ(a, b);
}

TEST(LightMutex, TryLockFailsWhileHeld) {
  LightMutex mutex;
  ASSERT_TRUE(mutex.try_lock());
  bool other = true;
  std::thread([&] { other = mutex.try_lock(); }).join();
  EXPECT_FALSE(other);
  mutex.unlock();
  std::thread([&] { other = mutex.try_lock(); }).join();
  EXPECT_TRUE(other);
  mutex.unlock();
}

}  // namespace
}  // namespace shardscope::common
