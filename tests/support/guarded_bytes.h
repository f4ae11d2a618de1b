// Proves that code does NOT read part of its input, without timing it: the input is copied into
// fresh pages and the pages past a chosen offset are made unreadable (PROT_NONE), so reading them
// crashes the test (a SEGV, or an AddressSanitizer report under ASan). The last page can stay
// readable for parsers that check a trailing byte first (bson_init_static reads the final NUL).
// Deterministic on any machine, at any load, under any sanitizer: the bound is on what is touched.
#pragma once
#include <sys/mman.h>
#include <unistd.h>

#include <cstdint>
#include <cstring>
#include <span>
#include <stdexcept>

namespace shardscope::testing {

class GuardedBytes {
 public:
  // Copies `bytes`; every whole page that starts at or after `readable_prefix` is unreadable,
  // except the page holding the last byte when `keep_last_page` is set. The unreadable range
  // starts at most one page after `readable_prefix`: choose a prefix a page shorter than what
  // the code may legitimately read, and an input long enough to leave pages to guard.
  GuardedBytes(std::span<const uint8_t> bytes, size_t readable_prefix, bool keep_last_page = false) {
    const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
    mapped_ = (bytes.size() + page - 1) / page * page + page;
    void* p = mmap(nullptr, mapped_, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) throw std::runtime_error("mmap failed");
    base_ = static_cast<uint8_t*>(p);
    std::memcpy(base_, bytes.data(), bytes.size());
    size_ = bytes.size();
    size_t from = (readable_prefix + page - 1) / page * page;
    size_t to = keep_last_page ? (size_ - 1) / page * page : mapped_;
    if (from < to) {
      if (mprotect(base_ + from, to - from, PROT_NONE) != 0) throw std::runtime_error("mprotect failed");
      guarded_ = to - from;
    }
  }
  ~GuardedBytes() { munmap(base_, mapped_); }
  GuardedBytes(const GuardedBytes&) = delete;
  GuardedBytes& operator=(const GuardedBytes&) = delete;

  std::span<const uint8_t> span() const { return {base_, size_}; }
  const uint8_t* data() const { return base_; }
  size_t size() const { return size_; }
  // How many bytes are unreadable: a test asserts this is most of the input, so the guard is real.
  size_t guardedBytes() const { return guarded_; }

 private:
  uint8_t* base_ = nullptr;
  size_t size_ = 0, mapped_ = 0, guarded_ = 0;
};

}  // namespace shardscope::testing
