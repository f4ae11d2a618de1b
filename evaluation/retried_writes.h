// Retryable writes (lsid + txnNumber, outside a transaction) that a driver sends again after a
// network error or a retryable error: the server runs each statement once and answers the retry
// with the first attempt's result, so the documents such a write created, upserted or replaced
// count once, whichever attempt's reply (or connection close, for an insert) settles them first.
// The keys already counted are kept process-wide (a retry comes on another connection, often of
// another thread) in a direct-mapped table: 4,096 slots, lock-free, allocated with the Evaluator.
// Two writes sharing a slot forget each other: a retry of either then counts again (bounded).
#pragma once
#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>

#include "protocol/command_view.h"

namespace shardscope::evaluation {

class RetriedWrites {
 public:
  // The write's (lsid, txnNumber) as one non-zero number; 0 when it is not a retryable write (no
  // txnNumber, no lsid, or a statement of a multi-document transaction, which retries whole).
  static uint64_t keyOf(const protocol::CommandView& view);
  // A statement of a multi-document transaction, or its commitTransaction / abortTransaction:
  // its (lsid, txnNumber) as one non-zero number, the same for all of them; 0 outside one.
  static uint64_t transactionKeyOf(const protocol::CommandView& view);
  // The session (its lsid alone) of such a statement: a newer transaction of the same session ends
  // the older one on the server. 0 outside a transaction.
  static uint64_t transactionSessionOf(const protocol::CommandView& view);
  // True the first time `key` settles (what it created counts); false for a retry of a write that
  // was already counted.
  bool firstSettle(uint64_t key) {
    std::atomic<uint64_t>& slot = slots_[key % kSlots];
    return slot.exchange(key, std::memory_order_relaxed) != key;
  }

 private:
  static constexpr size_t kSlots = 4096;
  std::array<std::atomic<uint64_t>, kSlots> slots_{};
};

}  // namespace shardscope::evaluation
