// Inserted documents the evaluation worker holds aside until their request's reply says which were
// created (docs/evaluation.md "Where it comes from"). An observer settles an insert in place while
// its documents are still in its thread's batch (the common case: a small insert's reply comes
// before the batch is handed over); a larger insert's documents (or digests) reach the worker first,
// and wait here for the settle event their observer queues after them.
//
// Bounded by bytes (EvaluationOptions::max_held_insert_bytes): past it the oldest held documents
// are applied as sent and counted unproven, so a settle lost with a dropped batch (a full queue)
// cannot keep memory. Single-threaded: the worker's (apply) or a reset's, under the queue's lock.
#pragma once
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>
#include <vector>

#include "evaluation/event_batch.h"

namespace shardscope::evaluation {

class HeldInserts {
 public:
  // A held document as the worker applies it.
  struct Doc {
    std::string_view ns, doc;
    bool digest = false;
    int64_t time_us = 0;
  };
  explicit HeldInserts(size_t max_bytes) : max_bytes_(max_bytes) {}

  // Holds `e` (an insert of `batch` with a ticket). Room is made by applying the oldest held
  // documents as sent (`asSent(Doc)`); a document larger than the whole bound goes there itself.
  template <class AsSent>
  void hold(const EventBatch& batch, const BufferedEvent& e, AsSent&& asSent) {
    const std::string_view ns = batch.view(e.ns), doc = batch.view(e.doc);
    const size_t cost = ns.size() + doc.size() + sizeof(Entry);
    if (cost > max_bytes_) return asSent(Doc{ns, doc, e.digest, e.time_us});
    while (live_bytes_ + cost > max_bytes_ && front_ < entries_.size()) {
      Entry& old = entries_[front_++];
      if (!old.live) continue;
      asSent(docOf(old));
      drop(old);
    }
    if (front_ == entries_.size()) clearKeepingMemory();
    Entry x;
    x.ticket = e.ticket;
    x.statement = e.statement;
    x.time_us = e.time_us;
    x.digest = e.digest;
    x.ns_at = bytes_.size();
    x.ns_size = ns.size();
    bytes_.append(ns);
    x.doc_at = bytes_.size();
    x.doc_size = doc.size();
    bytes_.append(doc);
    entries_.push_back(x);
    live_bytes_ += cost;
    ++live_;
  }

  // Settles `ticket`: a held document of a statement below `cutoff` and not in `failed` was created
  // (`created(Doc)`), any other created nothing. `unproven`: no reply says, all are applied as sent.
  // Returns {created, refused}.
  template <class Created>
  std::pair<uint64_t, uint64_t> settle(uint64_t ticket, uint32_t cutoff, std::string_view failed_bytes, bool unproven,
                                       Created&& created) {
    failed_.resize(failed_bytes.size() / 4);
    if (!failed_.empty()) std::memcpy(failed_.data(), failed_bytes.data(), failed_.size() * 4);
    std::sort(failed_.begin(), failed_.end());
    uint64_t applied = 0, refused = 0;
    for (size_t i = front_; i < entries_.size(); ++i) {
      Entry& x = entries_[i];
      if (!x.live || x.ticket != ticket) continue;
      const bool ran = unproven || (x.statement < cutoff && !std::binary_search(failed_.begin(), failed_.end(), x.statement));
      if (ran) {
        created(docOf(x));
        ++applied;
      } else {
        ++refused;
      }
      drop(x);
    }
    while (front_ < entries_.size() && !entries_[front_].live) ++front_;
    if (front_ == entries_.size()) clearKeepingMemory();
    else if (front_ > entries_.size() / 2 || bytes_.size() > 2 * live_bytes_ + 4096) compact();
    return {applied, refused};
  }

  size_t bytes() const { return live_bytes_; }
  size_t documents() const { return live_; }
  void clear() {
    entries_.clear();
    bytes_.clear();
    front_ = live_ = live_bytes_ = 0;
  }

 private:
  struct Entry {
    uint64_t ticket = 0;
    size_t ns_at = 0, ns_size = 0, doc_at = 0, doc_size = 0;
    int64_t time_us = 0;
    uint32_t statement = 0;
    bool digest = false, live = true;
  };
  Doc docOf(const Entry& x) const {
    return {std::string_view(bytes_).substr(x.ns_at, x.ns_size), std::string_view(bytes_).substr(x.doc_at, x.doc_size),
            x.digest, x.time_us};
  }
  void drop(Entry& x) {
    x.live = false;
    --live_;
    live_bytes_ -= x.ns_size + x.doc_size + sizeof(Entry);
  }
  // Keeps the memory for the next large insert, unless it is more than the bound's worth.
  void clearKeepingMemory() {
    entries_.clear();
    bytes_.clear();
    front_ = live_ = live_bytes_ = 0;
    if (bytes_.capacity() > max_bytes_) std::string().swap(bytes_);
    if (entries_.capacity() * sizeof(Entry) > max_bytes_) std::vector<Entry>().swap(entries_);
  }
  // Moves the live entries (and their bytes) to the front: linear, and only once half is gone.
  void compact() {
    std::string bytes;
    bytes.reserve(live_bytes_);
    size_t out = 0;
    for (size_t i = front_; i < entries_.size(); ++i) {
      Entry x = entries_[i];
      if (!x.live) continue;
      const size_t ns_at = bytes.size();
      bytes.append(bytes_, x.ns_at, x.ns_size);
      const size_t doc_at = bytes.size();
      bytes.append(bytes_, x.doc_at, x.doc_size);
      x.ns_at = ns_at;
      x.doc_at = doc_at;
      entries_[out++] = x;
    }
    entries_.resize(out);
    bytes_.swap(bytes);
    front_ = 0;
  }

  const size_t max_bytes_;
  std::string bytes_;
  std::vector<Entry> entries_;
  std::vector<uint32_t> failed_;
  size_t front_ = 0, live_ = 0, live_bytes_ = 0;
};

}  // namespace shardscope::evaluation
