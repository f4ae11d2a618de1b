// One lookup rule's index: canonical keys of lookup values, learning from documents into its
// mapping (rewrite/mapping_store.h), and the added values a filter would gain.
#pragma once
#include <bson/bson.h>

#include <array>
#include <atomic>
#include <cstdint>
#include <functional>
#include <list>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "rewrite/lookup_rule.h"
#include "rewrite/lookup_stats.h"
#include "rewrite/mapping_store.h"
#include "rewrite/value_key.h"

namespace shardscope::rewrite {

// One rule and its mapping: learning from documents and the values a filter would gain.
class LookupIndex {
 public:
  // Hooks for a shared mapping collection (set by the proxy; empty otherwise): a lookup value
  // that missed; a mapping confirmed by an acknowledged insert (the authoritative source); a value
  // that became ambiguous; a value whose mapping a change through the sidecar made obsolete.
  std::function<void(const bson_iter_t& value)> on_miss;
  std::function<void(const bson_iter_t& value, const bson_t* added)> on_learned_from_insert;
  std::function<void(const bson_iter_t& value)> on_ambiguous;
  std::function<void(const bson_iter_t& value)> on_dropped;
  std::function<void()> on_unsettled_all;  // every value unsettled by a change through this sidecar

  explicit LookupIndex(LookupRule rule) : rule_(std::move(rule)), store_(rule_.capacity, rule_.max_bytes) {}

  const LookupRule& rule() const { return rule_; }
  // Whether each of the lookup values `keys` (canonical keys) is one document: the rule assumes it
  // (unique, the default) and nothing the sidecar saw refuted it for these values (two documents of
  // one value in a reply or an insert batch), until POST /rewrite/reset. An order seen with several
  // lines loses the assumption alone; the others keep it.
  bool uniqueHolds(const std::vector<std::string>& keys);
  // Two documents of the value `key` were seen. Past rule_.capacity such values, every value loses
  // the assumption (no room to remember which).
  void refuteUnique(const std::string& key);
  MappingStore& store() { return store_; }
  LookupStats& stats() { return stats_; }

  // Learns from a document as stored in the collection (an unprojected document in a reply, a
  // mapping file line, the shared collection): every value of its lookup field (each element of
  // an array) maps to its added fields. A document whose added fields cannot be mapped (missing,
  // null, arrays...) makes its lookup values ambiguous, as does a value that contradicts the
  // mapping held. Returns true when the document mapped cleanly.
  bool learnFromDocument(const bson_t* doc) { return learnCompact(extract(doc).get(), false); }
  // The part of a document the mapping needs, {l: lookup value, v: {added fields}} (v absent
  // when they cannot be mapped), kept until the reply confirms an insert. Empty without a lookup field.
  struct Compact {
    std::string bytes;
    const bson_t* get();
    bson_t doc_;
  };
  Compact extract(const bson_t* doc) const;
  // `confirmedInsert`: an acknowledged insert, published to the shared collection.
  bool learnCompact(const bson_t* compact, bool confirmedInsert);
  // The distrust a compact would teach, taught now, its trust left for later (a transaction's
  // document, learned at commit): each of its lookup values held with other added values, or
  // whose document has none that can be mapped, or a decimal, becomes ambiguous. Whether the
  // transaction then commits unseen or not at all, no mapping it contradicts is believed meanwhile.
  void refuteContradicted(const bson_t* compact);
  // A change made through the sidecar set the added fields of `lookupValue` to those in
  // `addedFields` (flat, null: to something not known): replaces or drops the mapping, no contradiction.
  void moved(const bson_iter_t& lookupValue, const bson_t* addedFields);
  // Marks one lookup value ambiguous (and tells the shared collection).
  void markAmbiguous(const bson_iter_t& lookupValue);
  // A change that may have split the documents of a lookup value between two added values (one
  // line of a multi-line order moved): its mapping is dropped, and only a reply that holds every
  // document of that value may teach it again (learnComplete); single documents no longer can.
  void unsettle(const bson_iter_t& lookupValue);
  // The same for every lookup value: a change that cannot be attributed to the values it moves.
  // `tell`: false when another sidecar's marker (the shared collection) is what says so.
  void unsettleAll(bool tell = true);
  bool unsettled(const std::string& key);
  // Every document of `lookupValue` (a complete reply) carries `addedFields` (null: they disagree
  // or cannot be mapped, and the value becomes ambiguous).
  void learnComplete(const bson_iter_t& lookupValue, const bson_t* addedFields);
  // Whether a document seen through the sidecar held the lookup field in an array (or reached
  // it through one): such a document belongs to several orders, so a change of its added fields
  // made through one order may split another that the change does not name.
  bool lookupArraysSeen() const { return lookup_arrays_seen_.load(std::memory_order_relaxed); }
  // A stamp of what changed these lookup values' state (a BSON array: learned from a new line,
  // unsettled, moved, ambiguous) or every value's; it only grows. A complete reply is believed only when the stamp
  // taken as its request was planned is unchanged when it answers: replies on other connections
  // arrive in any order, so a read the server ran before a change may answer after it, and would
  // settle the order as it was. Hash slots: two values sharing one only cost a reply its lesson.
  uint64_t changeStamp(const bson_t* values) const;
  void reset();  // an explicit reset: the store, ambiguity and unsettled values
  // The added-field values for one lookup value: a BSON document {customerId: X, ...}.
  bool valuesFor(const bson_iter_t& lookupValue, std::string& addDoc);
  // Loads a JSON-lines file of documents with the lookup and added fields. On a bad line returns
  // false with `error` naming the file and line number.
  bool loadFile(const std::string& path, size_t& loaded, std::string& error);

 private:
  // The added fields of `doc` as a flat BSON document; false when one is missing or unmappable.
  bool addedValues(const bson_t* doc, std::string& value) const;
  // Returns true when this lookup value now maps cleanly to `value`.
  bool learnOne(const bson_iter_t& lookupValue, const std::string* value, const std::string* canon);
  // Calls `fn` with the value and its key, or for a decimal with each mapped number it may equal.
  void forEachEqual(const bson_iter_t& lookupValue, const std::function<void(const bson_iter_t&, const std::string&)>& fn);

  void noteChange(const std::string& key);

  static constexpr size_t kStampSlots = 4096;
  std::array<std::atomic<uint64_t>, kStampSlots> stamps_{};
  std::atomic<uint64_t> stamp_all_{0};
  LookupRule rule_;
  MappingStore store_;
  LookupStats stats_;
  std::mutex unsettled_mutex_;
  std::unordered_set<std::string> unsettled_;  // at most rule_.capacity keys, each MappingStore::storedKey
  std::atomic<size_t> unsettled_count_{0};     // its size: most lookups never take the lock
  std::atomic<bool> all_unsettled_{false};
  mutable std::atomic<bool> lookup_arrays_seen_{false};  // set by extract(); a reset keeps it (the arrays stay)
  std::unordered_set<std::string> several_documents_;  // values seen twice (under unsettled_mutex_): at most rule_.capacity storedKeys
  std::atomic<size_t> several_documents_count_{0};     // its size: most lookups never take the lock
  std::atomic<bool> unique_refuted_{false};             // for every value: several_documents_ had no room
};

// The canonical form of a flat document of added fields; empty when one cannot be mapped.
std::string canonicalValues(const bson_t* flat);

}  // namespace shardscope::rewrite
