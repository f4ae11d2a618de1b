#include "proxy/frame_buffer.h"

#include <algorithm>
#include <cstring>

#include <sys/mman.h>

namespace shardscope::proxy {

namespace {

// A large frame's memory comes fresh from mmap when no warm buffer fits (warm_buffers.h): in 2 MiB pages, the kernel takes 512 times fewer page faults to fill
// it (transparent huge pages in "madvise" mode, the usual default). Only whole aligned 2 MiB spans.
void adviseHugePages(uint8_t* data, size_t size) {
  constexpr uintptr_t kHuge = uintptr_t{2} << 20;
  if (size < 2 * kHuge) return;
  const uintptr_t begin = (reinterpret_cast<uintptr_t>(data) + kHuge - 1) & ~(kHuge - 1);
  const uintptr_t end = (reinterpret_cast<uintptr_t>(data) + size) & ~(kHuge - 1);
  if (end > begin) madvise(reinterpret_cast<void*>(begin), end - begin, MADV_HUGEPAGE);
}

}  // namespace

FrameBuffer::FrameBuffer(uint32_t maxMessageSize, WarmBuffers* warm) : reader_(maxMessageSize), warm_(warm) {}

void FrameBuffer::consume(size_t n) {
  start_ += n;
  if (start_ == end_) start_ = end_ = 0;
}

std::span<uint8_t> FrameBuffer::writable(size_t needed) {
  if (data_.empty()) data_ = SmallBufferPool::take();
  const size_t have = end_ - start_;
  // Room for the started frame (`needed` bytes once its header is in: never more, so a large frame
  // is allocated once), else for its header; moved to the front, the rest of the buffer is a useful read.
  const size_t required = needed > have ? needed : have + 16;
  if (data_.size() - start_ < required) {
    // Move the partial frame to the front first, so the buffer stays bounded by one frame.
    std::memmove(data_.data(), data_.data() + start_, have);
    start_ = 0;
    end_ = have;
    if (data_.size() < required) {
      protocol::MessageBuffer warm;
      if (warm_ && required >= kLargeMessageBytes) warm = warm_->take(required);
      if (warm.capacity() >= required) {  // its pages are already in memory: no fault, no zeroing
        warm.resize(required);
        std::memcpy(warm.data(), data_.data(), have);
        data_.swap(warm);
      } else {
        // The frame's size (vector growth would double: 2x a message just over a power of two), and
        // when the buffer may be kept warm 1/16 more, so that it fits a next message a little larger.
        const size_t capacity = warm_ && required >= kLargeMessageBytes ? required + required / 16 : required;
        data_.reserve(capacity);
        adviseHugePages(data_.data(), required);  // the headroom is touched only by a larger message
        data_.resize(required);
      }
    }
  }
  return {data_.data() + end_, data_.size() - end_};
}

void FrameBuffer::shrinkIfIdle() {
  if (data_.size() <= 4 * kInitialCapacity) return;
  const size_t have = end_ - start_;
  if (have == 0) {
    if (warm_) warm_->give(data_);
    protocol::MessageBuffer().swap(data_);
    start_ = end_ = 0;
  } else if (have <= kInitialCapacity) {
    protocol::MessageBuffer small = SmallBufferPool::take();
    std::memcpy(small.data(), data_.data() + start_, have);
    data_.swap(small);
    if (warm_) warm_->give(small);
    start_ = 0;
    end_ = have;
  }
}

void FrameBuffer::release() {
  if (hasPartial() || data_.capacity() == 0) return;
  if (warm_ && data_.capacity() >= kLargeMessageBytes) warm_->give(data_);
  else SmallBufferPool::give(data_);
  start_ = end_ = 0;
}

}  // namespace shardscope::proxy
