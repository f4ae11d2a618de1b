// Buffered reading of whole wire messages: one large read may bring several pipelined frames,
// and a frame is handed out only once it is complete and within the size limit.
#pragma once
#include <cstdint>
#include <span>
#include <vector>

#include "protocol/compression.h"
#include "protocol/frame_reader.h"
#include "proxy/small_buffer_pool.h"
#include "proxy/warm_buffers.h"

namespace shardscope::proxy {

class FrameBuffer {
 public:
  // With `warm`, a large frame's memory is taken from and given back to kept buffers (warm_buffers.h).
  explicit FrameBuffer(uint32_t maxMessageSize, WarmBuffers* warm = nullptr);

  // The next complete frame if one is buffered (status Ok), else NeedMore / TooLarge / Malformed.
  protocol::FrameResult peek() const { return reader_.next(buffered()); }
  std::span<uint8_t> frame(size_t size) { return {data_.data() + start_, size}; }
  void consume(size_t n);

  // Space to read into (a buffer from SmallBufferPool when it holds none); grows so that a started frame of `needed` bytes fits: to exactly its size,
  // never zero-filled, so memory is committed only as bytes arrive and a large message costs ~1x
  // its size (a header that merely declares 40 MB commits nothing).
  std::span<uint8_t> writable(size_t needed);
  void commit(size_t n) { end_ += n; }

  bool hasPartial() const { return end_ > start_; }
  std::span<const uint8_t> buffered() const { return {data_.data() + start_, end_ - start_}; }
  // Gives memory back after a large message, so idle connections stay small (also when a small
  // partial frame follows the large one).
  void shrinkIfIdle();
  size_t capacity() const { return data_.capacity(); }
  // An idle connection's buffer goes back (to the pool, or the warm buffers when large): it holds
  // none until bytes arrive again. Nothing happens while a frame is partly buffered.
  void release();

 private:
  protocol::FrameReader reader_;
  protocol::MessageBuffer data_;  // not zero-filled on growth
  size_t start_ = 0;
  size_t end_ = 0;
  // 4 KiB holds typical commands and replies; larger messages grow the buffer and it shrinks back
  // once they are gone; an idle connection holds none (release).
  static constexpr size_t kInitialCapacity = SmallBufferPool::kBufferBytes;
  WarmBuffers* warm_;
};

}  // namespace shardscope::proxy
