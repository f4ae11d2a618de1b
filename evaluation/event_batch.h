// What an Observer buffers between two hand-overs to the Evaluator: events whose bytes (inserted
// documents, or the digests of large ones, sampled filters, shape texts, field names) are copied
// into one flat arena. clear()
// keeps the memory, so a session that keeps sending the same kinds of requests buffers them
// without allocating.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "evaluation/namespace_state.h"

namespace shardscope::evaluation {

// Bytes in the batch's arena (offsets, as the arena may move while it grows).
struct ByteRange {
  size_t offset = 0, size = 0;
};

struct BufferedEvent {
  ByteRange ns;
  bool insert = false;
  DocOrigin origin = DocOrigin::Insert;  // insert: how the document came into being
  int64_t time_us = 0;  // insert: when it was observed
  ByteRange doc;        // insert: the document, or its digest (document_digest.h) when `digest`
  bool digest = false;
  // Operations (see OpRecord).
  OpKind kind = OpKind::Find;
  bool multi = false;
  bool upsert = false;
  // The command's first statement, under the command's own shape id: what /stats counts once per
  // command (a batch's later statements are statements only).
  bool opens_command = false;
  uint64_t shape_hash = 0;
  ByteRange shape, filter, modified, sort;
  // How many operations it stands for: an unsampled find repeating one of this batch's is counted
  // here instead of queued again (see Observer::Impl::observeRead).
  uint32_t count = 1;
  // Inserts the reply must prove (docs/evaluation.md "Where it comes from"). An inserted document
  // with a `ticket` waits for its request's reply: the observer settles it in place while it is
  // still in its thread's batch (clears the ticket, or sets `refused`); once handed over, the worker
  // holds it aside (held_inserts.h) until a `settle` event of the same ticket, queued after it.
  uint64_t ticket = 0;
  uint32_t statement = 0;  // insert: its index in the request; settle: statements from it on created nothing
  bool refused = false;    // insert: the reply says it created nothing (not applied, counted)
  bool settle = false;     // settles `ticket`: `doc` lists the failed statements (uint32 each)
  bool unproven = false;   // settle: no reply will prove it (w:0, closed, given up): applied as sent
  bool retried = false;    // settle: a retry of a retryable insert already counted: none applied (retriedInserts)
  bool outcome_unknown = false;  // settle: its transaction's outcome is unknown: none applied (TransactionWrites)
};

class EventBatch {
 public:
  std::vector<BufferedEvent> events;

  ByteRange copy(std::string_view bytes) {
    ByteRange r{bytes_.size(), bytes.size()};
    bytes_.append(bytes);
    return r;
  }
  // The namespace of the next event: events of one request share the previous event's copy.
  ByteRange copyNamespace(std::string_view ns) {
    if (!events.empty() && view(events.back().ns) == ns) return events.back().ns;
    return copy(ns);
  }
  // A list of names, each followed by a NUL: appendName() them after mark(), then since(mark).
  size_t mark() const { return bytes_.size(); }
  void appendName(std::string_view name) {
    bytes_.append(name);
    bytes_.push_back('\0');
  }
  // `prefix` then `name` as one name (a replacement's carried field, "$name"), with no copy between.
  void appendName(char prefix, std::string_view name) {
    bytes_.push_back(prefix);
    appendName(name);
  }
  void appendBytes(std::string_view bytes) { bytes_.append(bytes); }
  ByteRange since(size_t mark) const { return {mark, bytes_.size() - mark}; }
  // Drops what was appended since mark() (a walk that starts over).
  void truncate(size_t mark) { bytes_.resize(mark); }

  size_t bytes() const { return bytes_.size(); }
  void reserve(size_t bytes, size_t events) {
    bytes_.reserve(bytes);
    this->events.reserve(events);
  }
  size_t capacityBytes() const { return bytes_.capacity() + events.capacity() * sizeof(BufferedEvent); }
  std::string_view view(ByteRange r) const { return {bytes_.data() + r.offset, r.size}; }
  // The operations its events stand for (an event may count repeats).
  uint64_t operations() const {
    uint64_t n = 0;
    for (const BufferedEvent& e : events) n += e.count;
    return n;
  }

  OpRecord op(const BufferedEvent& e) const {
    return {e.kind, e.multi, e.upsert, e.shape_hash, view(e.shape), view(e.filter), view(e.modified), view(e.sort), e.count,
            e.opens_command ? e.count : 0};
  }

  // Keeps the memory for the next batch, unless one unusual request (a huge insert) grew it.
  void clear() {
    events.clear();
    bytes_.clear();
    if (events.capacity() > kKeepEvents) std::vector<BufferedEvent>().swap(events);
    if (bytes_.capacity() > kKeepBytes) std::string().swap(bytes_);
  }

 public:
  static constexpr size_t kKeepEvents = 4096;
  // Past this many bytes a batch is handed over at once (a few large inserts), so an observer
  // never buffers much more than this plus one request.
  static constexpr size_t kKeepBytes = size_t{1} << 20;

 private:
  std::string bytes_;
};

}  // namespace shardscope::evaluation
