#include "routing/key_document_stream.h"

#include <algorithm>
#include <cstring>

#include "protocol/bson_length_rules.h"
#include "protocol/wire.h"

namespace shardscope::routing {
namespace {

constexpr char kEmptyArray[] = "\x05\x00\x00\x00\x00";

void store32(std::string& s, size_t at, uint32_t v) { protocol::storeUint32(reinterpret_cast<uint8_t*>(s.data() + at), v); }

// Bytes of a value that has no length field, or 0 with `lengthed` set when a length field comes
// first (protocol/bson_length_rules.h); -1 for a type byte no valid document holds.
int64_t fixedBytes(uint8_t type, bool& lengthed) {
  lengthed = false;
  if (!protocol::bson_type_bytes::knownType(type)) return -1;
  uint32_t bytes = 0;
  const protocol::ValueStart start = protocol::valueStart(type, bytes);
  lengthed = start == protocol::ValueStart::Int32;
  return start == protocol::ValueStart::Bool ? 1 : bytes;  // a regex: 0, then its two C strings
}

}  // namespace

KeyDocumentStream::KeyDocumentStream(const ShardKeyPattern& pattern) : pattern_(pattern) {
  for (const KeyField& f : pattern_.fields()) longest_ = std::max(longest_, f.path.size());
}

void KeyDocumentStream::begin() {
  out_.clear();
  path_.clear();
  frames_.clear();
  pos_ = skip_ = key_len_ = 0;
  have_ = type_ = nuls_ = 0;
  step_ = Step::DocLength;
  role_ = Role::None;
  failed_ = done_ = false;
}

void KeyDocumentStream::take(const uint8_t* p, size_t n) {
  if (role_ == Role::KeyField) out_.append(reinterpret_cast<const char*>(p), n);
}

bool KeyDocumentStream::skip(uint64_t n) {
  if (pos_ + n > frames_.back().end) return fail();  // the value ends before its document's terminator
  skip_ = static_cast<uint32_t>(n);
  step_ = Step::Skip;
  if (n == 0) endElement();
  return true;
}

void KeyDocumentStream::endElement() {
  role_ = Role::None;
  step_ = Step::Element;
}

KeyDocumentStream::Role KeyDocumentStream::roleOf(std::string_view key) {
  if (key_len_ != key.size()) return Role::None;  // longer than any key path
  Frame& frame = frames_.back();
  if (std::find(frame.seen.begin(), frame.seen.end(), key) != frame.seen.end()) return Role::None;  // not the first
  Role role = Role::None;
  for (const KeyField& f : pattern_.fields()) {
    const std::string_view path = f.path;
    if (path.size() < path_.size() + key.size() || path.substr(0, path_.size()) != path_ ||
        path.substr(path_.size(), key.size()) != key)
      continue;
    if (path.size() == path_.size() + key.size()) role = Role::KeyField;
    else if (path[path_.size() + key.size()] == '.' && role == Role::None) role = Role::OnPath;
  }
  if (role != Role::None) frame.seen.emplace_back(key);
  return role;
}

void KeyDocumentStream::appendHead(uint8_t type) {
  out_.push_back(static_cast<char>(type));
  out_.append(key_);
  out_.push_back('\0');
}

bool KeyDocumentStream::endKey() {
  role_ = roleOf(key_);
  bool lengthed = false;
  const int64_t fixed = fixedBytes(type_, lengthed);
  if (fixed < 0) return fail();
  if (role_ != Role::None) {
    // Only a key field's value, and a sub-document on a key path, are read past their type.
    const bool array = type_ == BSON_TYPE_ARRAY, descend = role_ == Role::OnPath && type_ == BSON_TYPE_DOCUMENT;
    if (array || (role_ == Role::OnPath && !descend)) {
      appendHead(array ? BSON_TYPE_ARRAY : BSON_TYPE_NULL);
      if (array) out_.append(kEmptyArray, 5);
      role_ = Role::None;
    } else {
      appendHead(type_);
    }
  }
  if (type_ == BSON_TYPE_REGEX) {
    nuls_ = 0;
    step_ = Step::CString;
    return true;
  }
  if (lengthed) {
    have_ = 0;
    step_ = Step::Header;
    return true;
  }
  return skip(static_cast<uint64_t>(fixed));
}

bool KeyDocumentStream::onHeader() {
  const uint32_t len = protocol::loadUint32(header_);
  if (len > INT32_MAX) return fail();
  switch (type_) {
    case BSON_TYPE_UTF8: case BSON_TYPE_CODE: case BSON_TYPE_SYMBOL: return len ? skip(len) : fail();
    case BSON_TYPE_DBPOINTER: return len ? skip(uint64_t{len} + 12) : fail();
    case BSON_TYPE_BINARY: return skip(uint64_t{len} + 1);
    case BSON_TYPE_CODEWSCOPE: return len >= 14 ? skip(len - 4) : fail();
    default: break;  // a document or an array
  }
  if (len < 5) return fail();
  if (role_ != Role::OnPath) return skip(len - 4);
  // A sub-document on a key path: read for its own key path, its terminator at end.
  const uint32_t end = pos_ - 4 + len - 1;
  if (end >= frames_.back().end) return fail();
  path_.append(key_);
  path_.push_back('.');
  Frame& frame = frames_.emplace_back();
  frame.end = end;
  frame.out_at = out_.size();
  frame.path_size = path_.size();
  frame.seen.clear();
  out_.append(4, '\0');
  role_ = Role::None;
  step_ = Step::Element;
  return true;
}

bool KeyDocumentStream::feed(std::span<const uint8_t> piece) {
  if (failed_) return false;
  const uint8_t* p = piece.data();
  const uint8_t* const end = p + piece.size();
  if (done_ && p != end) return fail();  // bytes past the document
  while (p < end) {
    if (step_ == Step::Skip) {
      const auto n = static_cast<uint32_t>(std::min<size_t>(skip_, static_cast<size_t>(end - p)));
      take(p, n);
      p += n, pos_ += n, skip_ -= n;
      if (skip_ == 0) endElement();
      continue;
    }
    if (step_ == Step::DocLength) {
      header_[have_++] = *p++;
      ++pos_;
      if (have_ < 4) continue;
      const uint32_t len = protocol::loadUint32(header_);
      if (len < 5 || len > INT32_MAX) return fail();
      frames_.emplace_back().end = len - 1;
      out_.assign(4, '\0');
      step_ = Step::Element;
      continue;
    }
    const uint32_t limit = frames_.back().end;  // every element byte lies before it
    if (step_ == Step::Key) {  // the name, up to its NUL: kept while it could be on a key path
      const size_t room = std::min<size_t>(static_cast<size_t>(end - p), limit - pos_);
      const auto* nul = static_cast<const uint8_t*>(std::memchr(p, 0, room));
      const size_t n = nul ? static_cast<size_t>(nul - p) : room;
      if (key_.size() < longest_) key_.append(reinterpret_cast<const char*>(p), std::min(n, longest_ - key_.size()));
      key_len_ += static_cast<uint32_t>(n);
      p += n, pos_ += static_cast<uint32_t>(n);
      if (!nul) {
        if (pos_ >= limit) return fail();
        continue;
      }
      ++p, ++pos_;
      if (!endKey()) return false;
      continue;
    }
    const uint8_t b = *p++;
    const uint32_t at = pos_++;
    switch (step_) {
      case Step::Element:
        if (at == limit) {  // its document's terminator
          if (b != 0) return fail();
          out_.push_back('\0');
          store32(out_, frames_.back().out_at, static_cast<uint32_t>(out_.size() - frames_.back().out_at));
          frames_.pop_back();
          if (frames_.empty()) {
            done_ = true;
            if (p != end) return fail();
          } else {
            path_.resize(frames_.back().path_size);
          }
        } else {
          type_ = b;
          key_.clear();
          key_len_ = 0;
          step_ = Step::Key;
        }
        break;
      case Step::Header:
        if (at >= limit) return fail();
        take(&b, 1);
        header_[have_++] = b;
        if (have_ == 4 && !onHeader()) return false;
        break;
      case Step::CString:  // a regex: its pattern and its options
        if (at >= limit) return fail();
        take(&b, 1);
        if (b == 0 && ++nuls_ == 2) endElement();
        break;
      default: return fail();
    }
  }
  return true;
}

bool KeyDocumentStream::finish(bson_t& out) {
  if (failed_ || !done_) return false;
  return bson_init_static(&out, reinterpret_cast<const uint8_t*>(out_.data()), out_.size());
}

}  // namespace shardscope::routing
