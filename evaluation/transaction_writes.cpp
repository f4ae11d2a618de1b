#include "evaluation/transaction_writes.h"

namespace shardscope::evaluation {

void TransactionWrites::hold(uint64_t key, uint64_t session, const Doc& d) {
  if (key == 0) return;
  std::lock_guard lock(mutex_);
  const size_t cost = chargeOf(d);
  auto found = by_key_.find(key);
  if (found == by_key_.end()) {
    // A newer transaction of the session: the server ended the older one (aborted, unless its
    // commit was sent and its answer lost).
    if (auto older = by_session_.find(session); session && older != by_session_.end())
      end(older->second, !older->second->commit_unanswered);
    if (transactions_.size() >= kMaxTransactions) end(transactions_.begin(), false);
    transactions_.push_back({});
    auto at = std::prev(transactions_.end());
    at->key = key;
    at->session = session;
    found = by_key_.emplace(key, at).first;
    if (session) by_session_[session] = at;
  }
  // Room is made by giving up the oldest other transactions; a document larger than the whole
  // bound is not held at all.
  while (bytes_ + cost > max_bytes_ && transactions_.begin() != found->second) end(transactions_.begin(), false);
  Transaction& t = *found->second;
  if (bytes_ + cost > max_bytes_) {
    ++unknown_;
    return;
  }
  Committed::Entry e;
  e.ns_at = t.docs.bytes_.size();
  e.ns_size = d.ns.size();
  t.docs.bytes_.append(d.ns);
  e.doc_at = t.docs.bytes_.size();
  e.doc_size = d.doc.size();
  t.docs.bytes_.append(d.doc);
  e.time_us = d.time_us;
  e.origin = d.origin;
  e.digest = d.digest;
  t.docs.entries_.push_back(e);
  t.bytes += cost;
  t.inserts += d.origin == DocOrigin::Insert;
  bytes_ += cost;
  ++(t.commit_unanswered ? unanswered_ : pending_);
}

TransactionWrites::Committed TransactionWrites::commit(uint64_t key) {
  std::lock_guard lock(mutex_);
  auto found = by_key_.find(key);
  if (found == by_key_.end()) return {};
  Transaction& t = *found->second;
  Committed out = std::move(t.docs);
  (t.commit_unanswered ? unanswered_ : pending_) -= out.entries_.size();
  bytes_ -= t.bytes;
  if (auto s = by_session_.find(t.session); s != by_session_.end() && s->second == found->second) by_session_.erase(s);
  transactions_.erase(found->second);
  by_key_.erase(found);
  return out;
}

void TransactionWrites::abort(uint64_t key) {
  std::lock_guard lock(mutex_);
  if (auto found = by_key_.find(key); found != by_key_.end()) end(found->second, true);
}

void TransactionWrites::commitUnanswered(uint64_t key) {
  std::lock_guard lock(mutex_);
  auto found = by_key_.find(key);
  if (found == by_key_.end() || found->second->commit_unanswered) return;
  Transaction& t = *found->second;
  t.commit_unanswered = true;
  pending_ -= t.docs.entries_.size();
  unanswered_ += t.docs.entries_.size();
}

void TransactionWrites::end(List::iterator at, bool aborted) {
  const uint64_t n = at->docs.entries_.size();
  (at->commit_unanswered ? unanswered_ : pending_) -= n;
  if (aborted) aborted_inserts_.fetch_add(at->inserts, std::memory_order_relaxed);
  else unknown_ += n;
  bytes_ -= at->bytes;
  by_key_.erase(at->key);
  if (auto s = by_session_.find(at->session); s != by_session_.end() && s->second == at) by_session_.erase(s);
  transactions_.erase(at);
}

void TransactionWrites::clear() {
  std::lock_guard lock(mutex_);
  transactions_.clear();
  by_key_.clear();
  by_session_.clear();
  bytes_ = pending_ = unanswered_ = unknown_ = 0;
  aborted_inserts_.store(0, std::memory_order_relaxed);
}

uint64_t TransactionWrites::pending() const {
  std::lock_guard lock(mutex_);
  return pending_;
}

uint64_t TransactionWrites::outcomeUnknown() const {
  std::lock_guard lock(mutex_);
  return unanswered_ + unknown_;
}

size_t TransactionWrites::bytes() const {
  std::lock_guard lock(mutex_);
  return bytes_;
}

}  // namespace shardscope::evaluation
