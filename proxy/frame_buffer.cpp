#include "proxy/frame_buffer.h"

#include <algorithm>
#include <cstring>

namespace shardscope::proxy {

FrameBuffer::FrameBuffer(uint32_t maxMessageSize, size_t initialCapacity)
    : reader_(maxMessageSize), initial_capacity_(initialCapacity) {}

void FrameBuffer::consume(size_t n) {
  start_ += n;
  if (start_ == end_) start_ = end_ = 0;
}

std::span<uint8_t> FrameBuffer::writable(size_t needed) {
  if (data_.empty()) data_.resize(initial_capacity_);
  size_t have = end_ - start_;
  // Room for the started frame, grown with the bytes that actually arrive (at most doubling), so a
  // header that merely declares 40 MB commits no memory; at least a useful read otherwise.
  size_t required = std::max(have + std::min<size_t>(4096, initial_capacity_),
                             std::min(needed, 2 * std::max(have, initial_capacity_)));
  if (needed > have) required = std::min(required, needed);  // never more than the frame needs
  if (data_.size() - start_ < required) {
    // Move the partial frame to the front first, so the buffer stays bounded by one frame.
    std::memmove(data_.data(), data_.data() + start_, have);
    start_ = 0;
    end_ = have;
    if (data_.size() < required) data_.resize(required);
  }
  return {data_.data() + end_, data_.size() - end_};
}

void FrameBuffer::shrinkIfIdle() {
  if (data_.size() <= 4 * initial_capacity_) return;
  const size_t have = end_ - start_;
  if (have == 0) {
    std::vector<uint8_t>().swap(data_);
    start_ = end_ = 0;
  } else if (have <= initial_capacity_) {
    std::vector<uint8_t> small(initial_capacity_);
    std::memcpy(small.data(), data_.data() + start_, have);
    data_.swap(small);
    start_ = 0;
    end_ = have;
  }
}

}  // namespace shardscope::proxy
