// common::LightMutex, the lock of a session's statistics and evaluation batch: it excludes (plain
// counters incremented under it by threads that outnumber the CPUs come out exact, so waiters that
// yield still get the lock), a waiter past its spins gets it when a long hold ends, and try_lock
// fails while it is held.
#include "common/light_mutex.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
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

// A holder that keeps the lock for a while (past the waiter's spins and yields): the waiter gets it
// once it is given back, and not before.
TEST(LightMutex, AWaiterGetsItAfterALongHold) {
  LightMutex mutex;
  std::atomic<bool> released{false}, taken{false};
  mutex.lock();
  std::thread waiter([&] {
    std::lock_guard lock(mutex);
    EXPECT_TRUE(released.load());
    taken = true;
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  EXPECT_FALSE(taken.load());
  released = true;
  mutex.unlock();
  waiter.join();
  EXPECT_TRUE(taken.load());
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
