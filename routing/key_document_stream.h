// What a document's shard-key value is read from, kept from its bytes as they pass (issue 29: one
// 16 MB document is the whole insert, relayed as it arrives, never held). The result is a small
// document that ShardKeyPattern::extractFromDocument reads exactly as it reads the original: the
// first element of each name on a key path, a key field's value whole, a sub-document on the way to
// a key field with only its own key path, an array as an empty array (only its type is read), a
// scalar in place of a sub-document as null (a path below a scalar is missing either way).
// Everything else is skipped as it passes. Memory is the key fields' values and their names.
#pragma once
#include <bson/bson.h>

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "routing/shard_key_pattern.h"

namespace shardscope::routing {

class KeyDocumentStream {
 public:
  explicit KeyDocumentStream(const ShardKeyPattern& pattern);
  // A new document (its bytes start with its length field).
  void begin();
  // Its next piece, in order. False once the bytes cannot be a valid document (stop feeding).
  bool feed(std::span<const uint8_t> piece);
  // After the last piece: the key document (valid until the next begin), or false when the bytes
  // did not make one whole document.
  bool finish(bson_t& out);
  size_t heapBytes() const { return out_.capacity() + value_.capacity(); }

 private:
  enum class Step : uint8_t { DocLength, Element, Key, Header, Skip, CString };
  // What the element being read is to the key.
  enum class Role : uint8_t { None, KeyField, OnPath };
  struct Frame {
    uint32_t end = 0;     // offset of its terminator in the document
    size_t out_at = 0;    // its length field in out_
    size_t path_size = 0; // of path_ when it opened (its prefix, with the dot)
    std::vector<std::string> seen;  // names met at this level that were on a key path
  };

  bool fail() { return !(failed_ = true); }
  void take(const uint8_t* p, size_t n);  // value bytes: kept when the element is a key field
  bool startElement(uint8_t type);
  bool endKey();
  bool onHeader();
  void endElement();
  bool skip(uint64_t n);
  Role roleOf(std::string_view key);
  void appendHead(uint8_t type);

  const ShardKeyPattern& pattern_;
  size_t longest_ = 0;  // the longest key path: a name is kept up to this many bytes (key_len_ counts all)
  std::string out_, value_, key_, path_;
  std::vector<Frame> frames_;
  uint32_t pos_ = 0, skip_ = 0, key_len_ = 0;
  uint8_t header_[4] = {};
  uint8_t have_ = 0, type_ = 0, nuls_ = 0;
  Step step_ = Step::DocLength;
  Role role_ = Role::None;
  bool failed_ = false, done_ = false;
};

}  // namespace shardscope::routing
