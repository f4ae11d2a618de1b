// FlushBatch: one posted handler runs every flush added before it, in order, behind the handlers
// already ready; what is added while it runs waits for the next round; shutdown releases owners.
#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "proxy/flush_batch.h"

namespace shardscope::proxy {
namespace {

struct Flushed {
  std::vector<std::string>* log;
  std::string name;
  FlushBatch* again = nullptr;  // adds `twin` while it flushes
  std::shared_ptr<Flushed> twin;
};

void flushOne(void* p) {
  auto* f = static_cast<Flushed*>(p);
  f->log->push_back(f->name);
  if (f->again) f->again->add(f->twin, flushOne);
}

TEST(FlushBatch, OneHandlerFlushesEveryAddInOrderBehindReadyHandlers) {
  asio::io_context io(1);
  auto& batch = asio::use_service<FlushBatch>(io);
  std::vector<std::string> log;
  asio::post(io, [&] { log.push_back("ready"); });
  for (const char* name : {"a", "b", "c"}) batch.add(std::make_shared<Flushed>(Flushed{&log, name}), flushOne);
  asio::post(io, [&] { log.push_back("later"); });
  // One handler for the three flushes: it runs after "ready" (posted first) and before "later".
  EXPECT_EQ(io.run_one(), 1u);
  EXPECT_EQ(io.run_one(), 1u);
  EXPECT_EQ(log, (std::vector<std::string>{"ready", "a", "b", "c"}));
  EXPECT_EQ(io.run_one(), 1u);
  EXPECT_EQ(log.back(), "later");
  EXPECT_EQ(io.poll(), 0u);
}

TEST(FlushBatch, AnAddDuringTheRoundWaitsForTheNext) {
  asio::io_context io(1);
  auto& batch = asio::use_service<FlushBatch>(io);
  std::vector<std::string> log;
  auto twin = std::make_shared<Flushed>(Flushed{&log, "twin"});
  batch.add(std::make_shared<Flushed>(Flushed{&log, "first", &batch, twin}), flushOne);
  EXPECT_EQ(io.run_one(), 1u);
  EXPECT_EQ(log, std::vector<std::string>{"first"});
  EXPECT_EQ(io.run_one(), 1u);  // a second round, posted by the add
  EXPECT_EQ(log, (std::vector<std::string>{"first", "twin"}));
}

TEST(FlushBatch, ShutdownReleasesWhatWaits) {
  std::vector<std::string> log;
  auto owner = std::make_shared<Flushed>(Flushed{&log, "never"});
  {
    asio::io_context io(1);
    asio::use_service<FlushBatch>(io).add(owner, flushOne);
    EXPECT_EQ(owner.use_count(), 2);
  }
  EXPECT_EQ(owner.use_count(), 1);
  EXPECT_TRUE(log.empty());
}

}  // namespace
}  // namespace shardscope::proxy
