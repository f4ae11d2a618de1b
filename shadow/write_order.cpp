#include "shadow/write_order.h"

#include "shadow/command_prep.h"

namespace shardscope::shadow {

bool isOrderedWrite(const protocol::CommandView& view) {
  const CommandClass c = mirrorClass(view);
  return c == CommandClass::Write || c == CommandClass::Transaction;
}

void WriteGate::waitTurn(size_t rank) {
  std::unique_lock lock(mutex_);
  turn_.wait(lock, [&] { return prefix_ >= rank; });
}

void WriteGate::done(size_t rank) {
  {
    std::lock_guard lock(mutex_);
    if (rank >= done_.size() || done_[rank]) return;
    done_[rank] = true;
    while (prefix_ < done_.size() && done_[prefix_]) ++prefix_;
  }
  turn_.notify_all();
}

size_t WriteGate::completed() const {
  std::lock_guard lock(mutex_);
  return prefix_;
}

}  // namespace shardscope::shadow
