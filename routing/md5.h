// A small allocation-free MD5 (RFC 1321), only for MongoDB's hashed shard-key hash.
#pragma once
#include <cstddef>
#include <cstdint>

namespace shardscope::routing {

class Md5 {
 public:
  Md5();
  void update(const void* data, size_t len);
  void finish(uint8_t digest[16]);

 private:
  void block(const uint8_t* p);
  uint32_t state_[4];
  uint64_t length_ = 0;
  uint8_t buffer_[64];
  size_t buffered_ = 0;
};

}  // namespace shardscope::routing
