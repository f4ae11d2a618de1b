// The small read buffers of connections, lent on demand (issue 29). An idle connection holds no
// buffer: it gives its frame buffers back here when it parks (session.h) and takes one again when
// bytes arrive, so waking up reaches malloc only when more connections are awake than ever before.
// One free list per thread (a session's handlers run on one thread at a time), at most kKept long.
#pragma once
#include <cstddef>

#include "protocol/compression.h"

namespace shardscope::proxy {

class SmallBufferPool {
 public:
  // Holds typical commands and replies; a larger message grows its buffer past this.
  static constexpr size_t kBufferBytes = 4 * 1024;
  // Buffers kept per thread for waking connections (64 KiB): more are freed.
  static constexpr size_t kKept = 16;

  // A buffer of kBufferBytes (size and capacity), never zero-filled.
  static protocol::MessageBuffer take();
  // Keeps `buffer` when it is one of ours and the list has room, else frees it (noted in
  // parked_memory.h); `buffer` is left empty.
  static void give(protocol::MessageBuffer& buffer);
  // Buffers kept on the calling thread (tests).
  static size_t keptOnThisThread();
};

}  // namespace shardscope::proxy
