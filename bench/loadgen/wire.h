// Minimal MongoDB wire helpers shared by the load generator and the canned upstream.
// Benchmark-only: no validation beyond what keeps the tools from misreading a stream.
#pragma once

#include <bson/bson.h>

#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>

namespace bench {

constexpr int32_t kOpReply = 1;
constexpr int32_t kOpQuery = 2004;
constexpr int32_t kOpMsg = 2013;
constexpr uint32_t kChecksumPresent = 1u << 0;
constexpr uint32_t kMoreToCome = 1u << 1;
constexpr size_t kHeaderSize = 16;
constexpr int32_t kMaxMessage = 48'000'000;

inline int32_t loadI32(const char* p) {
  int32_t v;
  std::memcpy(&v, p, 4);
  return v;  // little-endian host assumed (x86-64 / arm64)
}
inline void storeI32(char* p, int32_t v) { std::memcpy(p, &v, 4); }

struct Header {
  int32_t length, request_id, response_to, op_code;
};
inline Header loadHeader(const char* p) {
  return {loadI32(p), loadI32(p + 4), loadI32(p + 8), loadI32(p + 12)};
}

// Appends an OP_MSG with one kind-0 body and optional kind-1 sequences to `out`.
// Returns the offset of the message in `out`.
struct Sequence {
  const char* identifier;
  const bson_t* const* docs;
  size_t count;
};
inline size_t appendOpMsg(std::string& out, int32_t request_id, int32_t response_to, uint32_t flags,
                          const bson_t* body, const Sequence* seqs = nullptr, size_t nseq = 0) {
  size_t start = out.size();
  out.append(kHeaderSize, '\0');
  out.append(reinterpret_cast<const char*>(&flags), 4);
  out.push_back('\0');
  out.append(reinterpret_cast<const char*>(bson_get_data(body)), body->len);
  for (size_t s = 0; s < nseq; ++s) {
    out.push_back('\1');
    size_t size_at = out.size();
    out.append(4, '\0');
    out.append(seqs[s].identifier);
    out.push_back('\0');
    for (size_t i = 0; i < seqs[s].count; ++i)
      out.append(reinterpret_cast<const char*>(bson_get_data(seqs[s].docs[i])), seqs[s].docs[i]->len);
    storeI32(out.data() + size_at, static_cast<int32_t>(out.size() - size_at));
  }
  char* h = out.data() + start;
  storeI32(h, static_cast<int32_t>(out.size() - start));
  storeI32(h + 4, request_id);
  storeI32(h + 8, response_to);
  storeI32(h + 12, kOpMsg);
  return start;
}

// The kind-0 body of an OP_MSG (nullptr/0 if there is none or the message is malformed).
inline bool opMsgBody(const char* msg, size_t len, const uint8_t** body, size_t* body_len) {
  if (len < kHeaderSize + 5) return false;
  uint32_t flags;
  std::memcpy(&flags, msg + kHeaderSize, 4);
  size_t end = len - ((flags & kChecksumPresent) ? 4 : 0);
  size_t p = kHeaderSize + 4;
  while (p < end) {
    char kind = msg[p++];
    if (p + 4 > end) return false;
    int32_t size = loadI32(msg + p);
    if (size < 5 || p + static_cast<size_t>(size) > end) return false;
    if (kind == 0) {
      *body = reinterpret_cast<const uint8_t*>(msg + p);
      *body_len = static_cast<size_t>(size);
      return true;
    }
    if (kind != 1) return false;
    p += static_cast<size_t>(size);
  }
  return false;
}

// True when a reply body has ok == 1 (any numeric type) — the loadgen's correctness check.
inline bool replyOk(const uint8_t* body, size_t len) {
  bson_iter_t it;
  if (!bson_iter_init_from_data(&it, body, len)) return false;
  if (!bson_iter_find(&it, "ok")) return false;
  return bson_iter_as_double(&it) == 1.0;
}

}  // namespace bench
