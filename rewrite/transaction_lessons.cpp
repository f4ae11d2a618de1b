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

void TransactionLessons::Holder::hold(const bson_t* compact, bool confirmedInsert) {
  owner_.add(key_, index_, compact, confirmedInsert);
}

void TransactionLessons::add(const std::string& key, const std::shared_ptr<LookupIndex>& index, const bson_t* compact,
                             bool confirmedInsert) {
  if (!compact) return;
  // What it contradicts is ambiguous from now on, held or not: a commit this connection never
  // sees (its reply lost, the lesson over the bounds) must not leave a contradicted mapping.
  index->refuteContradicted(compact);
  if (key.empty()) return;
  // A new txnNumber on a session ends its earlier transactions: what they held never commits.
  for (size_t i = transactions_.size(); i-- > 0;)
    if (transactions_[i].key != key && sessionOf(transactions_[i].key) == sessionOf(key)) erase(i);
  auto it = std::find_if(transactions_.begin(), transactions_.end(), [&](const Transaction& t) { return t.key == key; });
  std::string bytes(reinterpret_cast<const char*>(bson_get_data(compact)), compact->len);
  const size_t cost = lessonBytes(bytes) + (it == transactions_.end() ? sizeof(Transaction) + key.size() : 0);
  if (bytes_ + cost > kMaxBytes || (it == transactions_.end() && transactions_.size() >= kMaxTransactions)) {
    index->stats().onEvent("transaction: lesson dropped (over the per-connection bound)");
    return;
  }
  if (it == transactions_.end()) {
    transactions_.push_back(Transaction{.key = key});
    it = transactions_.end() - 1;
  }
  it->lessons.push_back(Lesson{index, std::move(bytes), confirmedInsert});
  it->bytes += cost;
  bytes_ += cost;
  index->stats().onEvent("transaction: lesson held until commit");
}

void TransactionLessons::commit(const std::string& key) {
  auto it = std::find_if(transactions_.begin(), transactions_.end(), [&](const Transaction& t) { return t.key == key; });
  if (it == transactions_.end()) return;
  Transaction done = std::move(*it);
  erase(static_cast<size_t>(it - transactions_.begin()));
  for (auto& lesson : done.lessons) {
    bson_t compact;
    if (bson_init_static(&compact, reinterpret_cast<const uint8_t*>(lesson.compact.data()), lesson.compact.size()))
      lesson.index->learnCompact(&compact, lesson.confirmed_insert);
    lesson.index->stats().onEvent("transaction: lesson applied at commit");
  }
}

void TransactionLessons::drop(const std::string& key) {
  for (size_t i = transactions_.size(); i-- > 0;)
    if (transactions_[i].key == key) {
      for (const auto& lesson : transactions_[i].lessons)
        lesson.index->stats().onEvent("transaction: lesson dropped (aborted or failed)");
      erase(i);
    }
}

void TransactionLessons::erase(size_t at) {
  bytes_ -= std::min(bytes_, transactions_[at].bytes);
  transactions_.erase(transactions_.begin() + static_cast<std::ptrdiff_t>(at));
}

}  // namespace shardscope::rewrite
