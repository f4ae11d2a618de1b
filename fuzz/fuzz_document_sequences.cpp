// libFuzzer: the sections after a streamed request's body (issue 29), checked as their bytes pass
// (proxy/document_sequences_check.h), with and without collecting the "documents" sequence, and
// with the collected documents read straight into their place (or taken from where they lie when
// whole in one piece) as the session does. All three must give decodeOpMsg's verdict on the whole
// message; a collected document must be valid BSON, and on acceptance the collected documents must
// be exactly the sequence's. The input is the bytes after the body; the cuts between pieces come
// from a hash of it, so a crash repeats.
#include <bson/bson.h>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <vector>

#include "protocol/op_msg.h"
#include "protocol/wire.h"
#include "proxy/document_sequences_check.h"

using namespace shardscope;

namespace {

struct Sink final : proxy::DocumentSink {
  std::span<uint8_t> beginDocument(size_t bytes) override {
    assembly.assign(bytes, 0);
    return assembly;
  }
  bool takesInPlace(size_t) override { return in_place; }  // as the session: a whole one from where it lies
  bool in_place = false;
  void endDocument(std::span<const uint8_t> doc) override {
    if (!protocol::isValidBson(doc)) __builtin_trap();
    documents.emplace_back(doc.begin(), doc.end());
  }
  std::vector<uint8_t> assembly;
  std::vector<std::vector<uint8_t>> documents;
};

enum class Mode { Check, Collect, InPlace };

bool streams(std::span<const uint8_t> tail, uint32_t seed, Mode mode, Sink& sink) {
  proxy::DocumentSequencesCheck check(tail.size(), mode == Mode::Check ? nullptr : &sink, "documents");
  uint32_t state = seed;
  bool ok = true;
  while (!tail.empty()) {
    state = state * 1103515245u + 12345u;
    const uint32_t r = state >> 16;
    size_t n = std::min<size_t>(tail.size(), (r & 3) ? 1 + r % 9 : 1 + r % 4096);
    bool fed;
    if (auto place = check.assemblyLeft(); mode == Mode::InPlace && !place.empty()) {
      n = std::min(n, place.size());
      std::memcpy(place.data(), tail.data(), n);  // the read
      fed = check.feed(place.first(n));
    } else {
      fed = check.feed(tail.first(n));
    }
    if (!fed) {
      ok = false;
      if (check.feed(tail.first(std::min<size_t>(1, tail.size())))) __builtin_trap();  // a refusal is final
      break;
    }
    tail = tail.subspan(n);
  }
  return ok && check.complete();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  // A whole message: header, flags, a fixed insert body, then the fuzzer's bytes.
  static const std::vector<uint8_t> kBody = [] {
    bson_t b = BSON_INITIALIZER;
    BSON_APPEND_UTF8(&b, "insert", "orders");
    BSON_APPEND_UTF8(&b, "$db", "shop");
    std::vector<uint8_t> out(bson_get_data(&b), bson_get_data(&b) + b.len);
    bson_destroy(&b);
    return out;
  }();
  std::vector<uint8_t> message(protocol::kHeaderSize + 4, 0);
  message.push_back(0);  // the body's kind
  message.insert(message.end(), kBody.begin(), kBody.end());
  const size_t head = message.size();
  message.insert(message.end(), data, data + size);
  protocol::storeInt32(message.data(), static_cast<int32_t>(message.size()));
  protocol::storeInt32(message.data() + 12, static_cast<int32_t>(protocol::OpCode::Msg));
  protocol::OpMsg msg;
  const bool expected = protocol::decodeOpMsg(message, msg).ok();

  uint32_t seed = 2166136261u;  // FNV-1a of the input seeds the cuts
  for (size_t i = 0; i < size; ++i) seed = (seed ^ data[i]) * 16777619u;
  const std::span<const uint8_t> tail(message.data() + head, size);
  for (Mode mode : {Mode::Check, Mode::Collect, Mode::InPlace}) {
    Sink sink;
    sink.in_place = mode == Mode::InPlace;
    if (streams(tail, seed, mode, sink) != expected) __builtin_trap();
    if (!expected || mode == Mode::Check) continue;
    std::vector<std::vector<uint8_t>> decoded;
    for (const auto& seq : msg.sequences)
      if (seq.identifier == "documents")
        protocol::forEachDocument(seq.documents, [&](std::span<const uint8_t> d) { decoded.emplace_back(d.begin(), d.end()); });
    if (sink.documents != decoded) __builtin_trap();
  }
  return 0;
}
