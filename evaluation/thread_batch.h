// The evaluation events one proxy thread's connections buffered since the last hand-over to the
// worker, and what the observers know of that batch (issue 29). One per thread, shared by the
// connections it serves (Evaluator::threadBatch), so what each operation appends to stays in cache:
// with a batch per connection, each operation found its connection's batch cold. Guarded by `mutex`:
// the thread's observers, a reply handled on another thread and a render's flush take it.
#pragma once
#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>

#include "common/light_mutex.h"
#include "evaluation/event_batch.h"

namespace shardscope::evaluation {

struct ThreadBatch {
  common::LightMutex mutex;
  std::unique_ptr<EventBatch> batch = std::make_unique<EventBatch>();
  // A find's sort fields are a function of its shape text (common/query_shape.h: " sort:" and the
  // spec, names kept), unless that text was cut or lost bytes ("<...>", a name cut with "...",
  // invalid UTF-8 as \ufffd). So a find whose shape text equals one already in this batch points at
  // the names copied for it. Ranges into the batch's arena: forgotten at each hand-over.
  struct KnownSort {
    uint64_t id = 0;
    ByteRange shape, sort;
    size_t repeat = SIZE_MAX;  // this shape's last unsampled find in the batch (Observer's observeRead)
  };
  static constexpr size_t kKnownSorts = 8;
  std::array<KnownSort, kKnownSorts> known_sorts{};
  uint32_t repeats = 0;       // operations of this batch counted in an earlier event, not queued again
  int64_t last_flush_us = 0;  // 0: none yet (the first operation sets it)
  // Hand-overs so far: an observer that left unsettled inserts here (see BufferedEvent::ticket)
  // knows from it whether they are still in `batch` (settled in place) or with the worker.
  uint64_t generation = 0;
};

}  // namespace shardscope::evaluation
