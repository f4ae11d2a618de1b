#include "proxy/flush_batch.h"

namespace shardscope::proxy {

asio::execution_context::id FlushBatch::id;

FlushBatch::FlushBatch(asio::io_context& io) : asio::execution_context::service(io), executor_(io.get_executor()) {}

void FlushBatch::add(std::shared_ptr<void> owner, Flush flush) {
  queued_.push_back({std::move(owner), flush});
  if (posted_) return;
  posted_ = true;
  asio::post(executor_, asio::bind_allocator(HandlerAllocator<void>(memory_), [this] { run(); }));
}

void FlushBatch::run() {
  posted_ = false;
  running_.swap(queued_);  // what is added while these flush goes in the next round
  for (auto& e : running_) e.flush(e.owner.get());
  running_.clear();
}

void FlushBatch::shutdown() {
  running_.clear();
  queued_.clear();
}

}  // namespace shardscope::proxy
