#include "rewrite/transaction_lessons.h"

#include <algorithm>
#include <cstring>

#include "rewrite/lookup_mapping.h"

namespace shardscope::rewrite {
namespace {

constexpr size_t kTxnNumberBytes = sizeof(int64_t);

// The lsid part of a key (the key is the lsid's bytes, then the txnNumber's 8).
std::string_view sessionOf(const std::string& key) {
  return std::string_view(key).substr(0, key.size() - std::min(key.size(), kTxnNumberBytes));
}

}  // namespace

std::string TransactionLessons::keyOf(const protocol::CommandView& view) {
  if (!view.hasLsid || !view.hasTxnNumber) return {};
  bson_iter_t lsid, txn;
  if (!bson_iter_init_find(&lsid, &view.body, "lsid") || !BSON_ITER_HOLDS_DOCUMENT(&lsid) ||
      !bson_iter_init_find(&txn, &view.body, "txnNumber") || !BSON_ITER_HOLDS_NUMBER(&txn))
    return {};
  uint32_t length = 0;
  const uint8_t* data = nullptr;
  bson_iter_document(&lsid, &length, &data);
  const int64_t number = bson_iter_as_int64(&txn);
  std::string key(reinterpret_cast<const char*>(data), length);
  key.append(reinterpret_cast<const char*>(&number), kTxnNumberBytes);
  return key;
}

TransactionLessons::~TransactionLessons() {
  std::lock_guard lock(mutex_);
  while (!transactions_.empty()) end(transactions_.begin(), false);
}

void TransactionLessons::Holder::hold(const bson_t* compact, bool confirmedInsert) {
  owner_.add(key_, index_, compact, confirmedInsert);
}

void TransactionLessons::Holder::holdChanges(std::shared_ptr<const ReplyLearning> learning) {
  owner_.addChanges(key_, index_, std::move(learning));
}

void TransactionLessons::charge(Transaction& t, size_t bytes) {
  t.bytes += bytes;
  bytes_.fetch_add(bytes, std::memory_order_relaxed);
}

TransactionLessons::Transaction* TransactionLessons::open(const std::string& key) {
  if (auto it = by_key_.find(key); it != by_key_.end()) return &*it->second;
  // A new txnNumber on a session ends its earlier transaction.
  if (auto it = by_session_.find(sessionOf(key)); it != by_session_.end()) end(it->second, false);
  if (transactions_.size() >= kMaxTransactions) end(transactions_.begin(), false);  // the oldest makes room
  const size_t cost = sizeof(Transaction) + 2 * key.size();
  if (bytes() + cost > kMaxBytes) return nullptr;
  transactions_.emplace_back().key = key;
  auto opened = std::prev(transactions_.end());
  by_key_.emplace(opened->key, opened);
  by_session_.emplace(sessionOf(opened->key), opened);
  count_.fetch_add(1, std::memory_order_relaxed);
  charge(*opened, cost);
  return &*opened;
}

void TransactionLessons::add(const std::string& key, const std::shared_ptr<LookupIndex>& index, const bson_t* compact,
                             bool confirmedInsert) {
  if (!compact) return;
  // What it contradicts is ambiguous from now on, held or not: a commit the sidecar never sees
  // (its reply lost, the lesson over the bounds) must not leave a contradicted mapping.
  index->refuteContradicted(compact);
  std::lock_guard lock(mutex_);
  Transaction* t = key.empty() ? nullptr : open(key);
  const size_t cost = sizeof(Lesson) + compact->len;
  if (!t || bytes() + cost > kMaxBytes) {
    index->stats().onEvent("transaction: lesson dropped (over the process-wide bound)");
    return;
  }
  t->lessons.push_back(Lesson{index, std::string(reinterpret_cast<const char*>(bson_get_data(compact)), compact->len), confirmedInsert});
  charge(*t, cost);
  index->stats().onEvent("transaction: lesson held until commit");
}

void TransactionLessons::addChanges(const std::string& key, const std::shared_ptr<LookupIndex>& index,
                                    std::shared_ptr<const ReplyLearning> learning) {
  if (!learning || (learning->changes.empty() && !learning->unsettles_all)) return;
  std::lock_guard lock(mutex_);
  Transaction* t = key.empty() ? nullptr : open(key);
  if (!t) {  // nowhere to wait for the end: the strongest distrust, now
    index->unsettleAll();
    return;
  }
  const size_t cost = sizeof(Change) + heldBytes(*learning);
  if (bytes() + cost <= kMaxBytes) {
    t->changes.push_back(Change{index, std::move(learning)});
    charge(*t, cost);
    return;
  }
  // Too big to keep: the end unsettles every value of the rule instead (one entry per rule).
  if (std::find(t->unsettle_all.begin(), t->unsettle_all.end(), index) != t->unsettle_all.end()) return;
  if (bytes() + sizeof(index) > kMaxBytes) {
    index->unsettleAll();
    return;
  }
  t->unsettle_all.push_back(index);
  charge(*t, sizeof(index));
}

void TransactionLessons::commit(const std::string& key) {
  std::lock_guard lock(mutex_);
  if (auto it = by_key_.find(key); it != by_key_.end()) end(it->second, true);
}

void TransactionLessons::distrustAgain(const std::string& key) {
  std::lock_guard lock(mutex_);
  auto it = by_key_.find(key);
  if (it == by_key_.end()) return;
  for (const auto& change : it->second->changes) reapplyDistrust(*change.index, *change.learning);
  for (const auto& index : it->second->unsettle_all) index->unsettleAll();
}

void TransactionLessons::drop(const std::string& key) {
  std::lock_guard lock(mutex_);
  if (auto it = by_key_.find(key); it != by_key_.end()) end(it->second, false);
}

void TransactionLessons::end(List::iterator at, bool committed) {
  by_key_.erase(at->key);
  by_session_.erase(sessionOf(at->key));
  Transaction done = std::move(*at);
  transactions_.erase(at);
  count_.fetch_sub(1, std::memory_order_relaxed);
  bytes_.fetch_sub(std::min(bytes(), done.bytes), std::memory_order_relaxed);
  for (auto& lesson : done.lessons) {
    if (committed) {
      bson_t compact;
      if (bson_init_static(&compact, reinterpret_cast<const uint8_t*>(lesson.compact.data()), lesson.compact.size()))
        lesson.index->learnCompact(&compact, lesson.confirmed_insert);
    }
    lesson.index->stats().onEvent(committed ? "transaction: lesson applied at commit"
                                            : "transaction: lesson dropped (aborted, failed or unknown)");
  }
  for (const auto& change : done.changes) reapplyDistrust(*change.index, *change.learning);
  for (const auto& index : done.unsettle_all) index->unsettleAll();
}

}  // namespace shardscope::rewrite
