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
  while (!transactions_.empty()) end(transactions_.size() - 1, false);
}

void TransactionLessons::Holder::hold(const bson_t* compact, bool confirmedInsert) {
  owner_.add(key_, index_, compact, confirmedInsert);
}

void TransactionLessons::Holder::holdChanges(std::shared_ptr<const ReplyLearning> learning) {
  owner_.addChanges(key_, index_, std::move(learning));
}

TransactionLessons::Transaction* TransactionLessons::open(const std::string& key) {
  // A new txnNumber on a session ends its earlier transactions.
  for (size_t i = transactions_.size(); i-- > 0;)
    if (transactions_[i].key != key && sessionOf(transactions_[i].key) == sessionOf(key)) end(i, false);
  auto it = std::find_if(transactions_.begin(), transactions_.end(), [&](const Transaction& t) { return t.key == key; });
  if (it != transactions_.end()) return &*it;
  if (transactions_.size() >= kMaxTransactions) end(0, false);  // the oldest makes room
  const size_t cost = sizeof(Transaction) + key.size();
  if (bytes_ + cost > kMaxBytes) return nullptr;
  Transaction& opened = transactions_.emplace_back();
  opened.key = key;
  opened.bytes = cost;
  bytes_ += cost;
  return &opened;
}

void TransactionLessons::add(const std::string& key, const std::shared_ptr<LookupIndex>& index, const bson_t* compact,
                             bool confirmedInsert) {
  if (!compact) return;
  // What it contradicts is ambiguous from now on, held or not: a commit this connection never
  // sees (its reply lost, the lesson over the bounds) must not leave a contradicted mapping.
  index->refuteContradicted(compact);
  Transaction* t = key.empty() ? nullptr : open(key);
  const size_t cost = sizeof(Lesson) + compact->len;
  if (!t || bytes_ + cost > kMaxBytes) {
    index->stats().onEvent("transaction: lesson dropped (over the per-connection bound)");
    return;
  }
  t->lessons.push_back(Lesson{index, std::string(reinterpret_cast<const char*>(bson_get_data(compact)), compact->len), confirmedInsert});
  t->bytes += cost;
  bytes_ += cost;
  index->stats().onEvent("transaction: lesson held until commit");
}

void TransactionLessons::addChanges(const std::string& key, const std::shared_ptr<LookupIndex>& index,
                                    std::shared_ptr<const ReplyLearning> learning) {
  if (!learning || (learning->changes.empty() && !learning->unsettles_all)) return;
  Transaction* t = key.empty() ? nullptr : open(key);
  if (!t) {  // nowhere to wait for the end: the strongest distrust, now
    index->unsettleAll();
    return;
  }
  const size_t cost = sizeof(Change) + heldBytes(*learning);
  if (bytes_ + cost <= kMaxBytes) {
    t->changes.push_back(Change{index, std::move(learning)});
    t->bytes += cost;
    bytes_ += cost;
    return;
  }
  // Too big to keep: the end unsettles every value of the rule instead (one entry per rule).
  if (std::find(t->unsettle_all.begin(), t->unsettle_all.end(), index) != t->unsettle_all.end()) return;
  if (bytes_ + sizeof(index) > kMaxBytes) {
    index->unsettleAll();
    return;
  }
  t->unsettle_all.push_back(index);
  t->bytes += sizeof(index);
  bytes_ += sizeof(index);
}

void TransactionLessons::commit(const std::string& key) {
  auto it = std::find_if(transactions_.begin(), transactions_.end(), [&](const Transaction& t) { return t.key == key; });
  if (it != transactions_.end()) end(static_cast<size_t>(it - transactions_.begin()), true);
}

void TransactionLessons::drop(const std::string& key) {
  auto it = std::find_if(transactions_.begin(), transactions_.end(), [&](const Transaction& t) { return t.key == key; });
  if (it != transactions_.end()) end(static_cast<size_t>(it - transactions_.begin()), false);
}

void TransactionLessons::end(size_t at, bool committed) {
  Transaction done = std::move(transactions_[at]);
  transactions_.erase(transactions_.begin() + static_cast<std::ptrdiff_t>(at));
  bytes_ -= std::min(bytes_, done.bytes);
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
