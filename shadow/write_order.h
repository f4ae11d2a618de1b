// Replay keeps the captured global order of writes across connections: a write is sent only when
// every write captured before it, on any connection, has been acknowledged. Reads are not ordered
// across connections (each connection keeps its own order). Used by `shardscope replay`.
#pragma once
#include <condition_variable>
#include <cstddef>
#include <mutex>
#include <vector>

#include "protocol/command_view.h"

namespace shardscope::shadow {

// True for commands that change data (insert, update, delete, findAndModify, DDL, aggregate with
// $out/$merge) or belong to a transaction: their order across connections is kept.
bool isOrderedWrite(const protocol::CommandView& view);

// Writes are ranked 0..n-1 in captured order. waitTurn(r) returns once every rank below r is done;
// done(r) may be called for any rank (a connection that failed gives up its remaining writes so
// the others are not stuck behind them).
class WriteGate {
 public:
  explicit WriteGate(size_t writes) : done_(writes, false) {}
  void waitTurn(size_t rank);
  void done(size_t rank);
  size_t completed() const;  // the length of the done prefix

 private:
  mutable std::mutex mutex_;
  std::condition_variable turn_;
  std::vector<bool> done_;
  size_t prefix_ = 0;  // every rank below this is done
};

}  // namespace shardscope::shadow
