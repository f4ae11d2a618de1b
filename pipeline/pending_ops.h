// The persistent part of an Operation: what a request sent upstream leaves behind for its reply,
// matched by responseTo (as Envoy's ActiveQuery). Pipelining depth is small in practice, so a
// short vector beats a map.
#pragma once
#include <array>
#include <chrono>
#include <cstring>
#include <type_traits>
#include <cstdint>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "protocol/compression.h"
#include "rewrite/lookup_guard.h"
#include "rewrite/lookup_learning.h"
#include "routing/target_result.h"
#include "stats/registry.h"

namespace shardscope::pipeline {

// Bytes a RewriteState holds, added to its pipeline's count (Pipeline::largeBufferBytes, so charged
// to limits.max_buffered_bytes) for as long as the state lives: until the last reply that needs it.
class HeldBytes {
 public:
  HeldBytes() = default;
  HeldBytes(const HeldBytes&) = delete;
  HeldBytes& operator=(const HeldBytes&) = delete;
  ~HeldBytes() { end(); }
  void hold(size_t* total, size_t bytes) {
    end();
    total_ = total;
    bytes_ = bytes;
    *total_ += bytes_;
  }

 private:
  void end() {
    if (total_) *total_ -= bytes_;
    total_ = nullptr;
  }
  size_t* total_ = nullptr;
  size_t bytes_ = 0;
};

// A command the lookup rule rewrote: what is needed to run the original instead if the reply
// shows the mapping was stale. Allocated only for rewritten commands.
struct RewriteState {
  rewrite::RewritePlan plan;
  std::string command;
  std::string db, collection;
  std::vector<uint8_t> original;  // the client's message, uncompressed, as it arrived
  routing::Targeting before = routing::Targeting::Unclassified;
  routing::TargetResult original_target;  // how the original runs if it must (stats of a fallback)
  routing::TargetResult rewritten_target; // a retryable write's rewritten write, sent once a read confirms it
  std::vector<std::string> suspects;      // after a fallback: lookup keys the rewrite missed
  rewrite::FallbackCause cause = rewrite::FallbackCause::None;  // why the original ran (after a fallback)
  std::vector<uint8_t> rewritten;         // a retryable write's rewritten message, held until a read confirms it
  HeldBytes held;                         // the copies above, counted by the pipeline while they live

  // What the copies above hold (capacities: what the allocator gave them).
  size_t copiedBytes() const {
    size_t keys = 0;
    for (const auto& k : plan.in_keys) keys += k.capacity();
    return original.capacity() + rewritten.capacity() + plan.body.capacity() + plan.sequence_docs.capacity() +
           plan.lookup_values.capacity() + plan.confirm_filter.capacity() + keys;
  }
};

// What one observer keeps with an operation until its reply (fixed size, trivially copied: the
// pending record allocates nothing). Each observer gets its own slot (Observer::slot), so a reply
// reaches every observer with that observer's own state for the request it answers, whatever
// the order replies come in.
struct ObserverSlot {
  static constexpr size_t kBytes = 16;
  alignas(8) unsigned char bytes[kBytes] = {};
  template <typename T>
  T get() const {
    static_assert(sizeof(T) <= kBytes && std::is_trivially_copyable_v<T>);
    T out;
    std::memcpy(&out, bytes, sizeof(T));
    return out;
  }
  template <typename T>
  void set(const T& value) {
    static_assert(sizeof(T) <= kBytes && std::is_trivially_copyable_v<T>);
    std::memcpy(bytes, &value, sizeof(T));
  }
};

struct PendingOp {
  static constexpr size_t kObserverSlots = 8;  // observers per connection (Pipeline::addObserver checks)

  // What every reply reads comes first, the shard set and the observers' slots last: a reply is
  // handled where its record lies, and reads only the lines it needs of it (issue 29).
  int32_t request_id = 0;
  int32_t client_request_id = 0;           // a proxy-issued re-run: the reply answers this client id
  std::chrono::steady_clock::time_point start;
  stats::OpHandle stats;
  int64_t get_more_cursor = 0; // a getMore's cursor: forgotten when the reply says it is exhausted
  bool sharded = false;        // targeting used a routing table: learn cursors from the reply
  bool first_hello = false;    // the reply carries the compression negotiation
  bool never_compress = false; // hello / auth replies travel uncompressed
  bool long_poll = false;      // a streaming hello (maxAwaitTimeMS): a monitor waiting, not work in flight
  bool discard_reply = false;  // a proxy-issued killCursors: nobody waits for its reply
  bool injected_fault = false; // answered by the sidecar itself (fault injection)
  // The wait the client itself allowed the server (maxAwaitTimeMS, maxTimeMS, wtimeout): the request
  // deadline comes on top of it, so an awaitable hello or an awaitData getMore is not cut short.
  uint32_t declared_wait_ms = 0;
  std::optional<protocol::Compressor> reply_compressor;  // the client wrote compressed: answer in kind
  std::shared_ptr<rewrite::LookupIndex> lookup;  // the namespace has a lookup rule: learn from the reply
  std::shared_ptr<RewriteState> rewrite;   // set when this request was rewritten
  std::shared_ptr<rewrite::ReplyLearning> learning;  // what the reply may teach the lookup rule
  std::shared_ptr<RewriteState> fell_back;  // a re-run: the rewrite it replaces (its reply judges the mapping)
  std::shared_ptr<RewriteState> confirming;  // a proxy-issued read confirming a retryable write's mapping
  uint64_t shards_load = 0;  // the routing load `shards` are positions in (remembered with a cursor)
  routing::ShardSet shards;
  std::array<ObserverSlot, kObserverSlots> slots{};  // one per observer, by Observer::slot()

  // The id of the client's request that this op answers (a re-run answers the original's).
  int32_t clientRequestId() const { return client_request_id ? client_request_id : request_id; }
};

class PendingOps {
 public:
  // A client request arriving with this many in flight on its connection is answered with an
  // error instead of being forwarded (README, "Behaviour at the edges"). Drivers never come close:
  // they send one request per connection at a time (exhaust cursors and moreToCome add none).
  static constexpr size_t kMaxClientRequests = 4096;
  // The proxy's own requests (a rewrite's re-run, its killCursors) may go a little past that.
  static constexpr size_t kMax = kMaxClientRequests + 16;

  bool full() const { return ops_.size() >= kMaxClientRequests; }
  // By reference, and taken below straight into the optional returned: a PendingOp is ~400 bytes,
  // and each extra move of it was ~50 instructions per operation (issue 29).
  bool add(PendingOp&& op) {
    if (ops_.size() >= kMax) return false;
    ops_.push_back(std::move(op));
    return true;
  }
  // Where the op answering `responseTo` lies (npos: none), and its removal once handled in place.
  // Nothing may be added or removed in between (an add may move every op): a reply whose handling
  // adds ops takes its op out first (take).
  static constexpr size_t npos = SIZE_MAX;
  size_t indexOf(int32_t responseTo) const {
    for (size_t i = 0; i < ops_.size(); ++i)
      if (ops_[i].request_id == responseTo) return i;
    return npos;
  }
  PendingOp& at(size_t i) { return ops_[i]; }
  void erase(size_t i, int32_t requestId) {
    if (i >= ops_.size() || ops_[i].request_id != requestId)
      throw std::logic_error("PendingOps::erase: the list changed while a reply was handled in place");
    removeAt(i);
  }
  PendingOp* find(int32_t requestId) {
    const size_t i = indexOf(requestId);
    return i == npos ? nullptr : &ops_[i];
  }
  // The op a reply answers; an exhaust reply (moreToCome) keeps it, re-keyed to the reply's id,
  // because the next reply of the stream answers that id.
  std::optional<PendingOp> take(int32_t responseTo, bool moreToCome, int32_t replyId) {
    std::optional<PendingOp> op;
    const size_t i = indexOf(responseTo);
    if (i == npos) return op;
    if (moreToCome) {  // the stream goes on: the op stays, and its copy answers this reply
      op.emplace(ops_[i]);
      ops_[i].request_id = replyId;
      ops_[i].start = std::chrono::steady_clock::now();  // the next reply is due from now, not from the request
      return op;
    }
    // Moved out, not copied: a copy would bump every shared_ptr's count (atomics) per reply.
    op.emplace(std::move(ops_[i]));
    removeAt(i);
    return op;
  }
  bool empty() const { return ops_.empty(); }
  void releaseIdle() {
    if (ops_.empty()) std::vector<PendingOp>().swap(ops_);
  }
  // Nothing but monitors' streaming hellos: a drain need not wait for those (up to maxAwaitTimeMS).
  bool onlyLongPolls() const {
    for (const auto& op : ops_)
      if (!op.long_poll) return false;
    return true;
  }
  size_t size() const { return ops_.size(); }
  size_t heldBytes() const { return ops_.capacity() * sizeof(PendingOp); }
  // When the first op overdue under a `request` deadline is (each op's own declared wait added).
  std::optional<std::chrono::steady_clock::time_point> earliestDeadline(std::chrono::milliseconds request) const {
    std::optional<std::chrono::steady_clock::time_point> t;
    for (const auto& op : ops_) {
      const auto due = op.start + request + std::chrono::milliseconds(op.declared_wait_ms);
      if (!t || due < *t) t = due;
    }
    return t;
  }

 private:
  void removeAt(size_t i) {  // the last op takes its place: order does not matter
    if (i + 1 != ops_.size()) ops_[i] = std::move(ops_.back());
    ops_.pop_back();
  }
  std::vector<PendingOp> ops_;
};

}  // namespace shardscope::pipeline
