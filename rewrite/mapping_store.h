// The lookup-value -> added-fields mapping of one rule, bounded in entries (`capacity`) and in
// bytes (`max_bytes`), least recently used evicted first, safe to share between sessions (striped
// locks; the one lock they share, the interned values', is taken only to learn or drop a mapping,
// never by a lookup). A lookup value ever seen with two different added values
// is ambiguous: the rule's assertion (one order, one customer) does not hold for it, so it is never
// rewritten again until the mapping is reset.
//
// What a client sends cannot grow it past its bounds: a lookup key longer than kMaxKeyBytes is kept
// as a 16-byte digest (a collision can only cost a fallback: the rewritten filter keeps the
// original's predicate and its reply is verified), added values longer than kMaxValueBytes are not
// learned, and added values are interned (many orders share one customer). `bytes` is what the
// entries, interned values and hash tables hold, as the allocator counts it.
#pragma once
#include <array>
#include <atomic>
#include <cstdint>
#include <list>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>

namespace shardscope::rewrite {

struct MappingCounters {
  uint64_t size = 0, capacity = 0, hits = 0, misses = 0, learned = 0, corrected = 0, evicted = 0, forgotten = 0;
  uint64_t ambiguous = 0;      // lookup values held as ambiguous (never rewritten)
  uint64_t moved = 0;          // values replaced by a change made through the sidecar
  uint64_t bytes = 0;          // held by mappings, interned values, ambiguous keys and their tables
  uint64_t max_bytes = 0;      // the configured bound on `bytes`
  uint64_t keys_hashed = 0;    // lookup keys over kMaxKeyBytes stored as a digest
  uint64_t values_too_long = 0;  // mappings not learned: added values over kMaxValueBytes
  bool suspended = false;      // ambiguous values filled the capacity: the rule rewrites nothing
};

class MappingStore {
 public:
  static constexpr size_t kDefaultMaxBytes = size_t{64} << 20;
  static constexpr size_t kMaxKeyBytes = 64;     // canonical lookup keys longer than this are hashed
  static constexpr size_t kMaxValueBytes = 512;  // added-field documents longer than this are not learned

  MappingStore(size_t capacity, size_t maxBytes = kDefaultMaxBytes);

  enum class Learn : uint8_t { Learned, Unchanged, Contradicted, Ambiguous, NoRoom, TooLong };
  // Remembers key -> value (a BSON document of the added fields; `canon` its canonical form). A
  // different value for a known key is a contradiction: the key becomes ambiguous.
  Learn learn(const std::string& key, const std::string& value, const std::string& canon);
  // A change made through the sidecar (an acknowledged update that set the added fields): the old
  // value is obsolete, not contradicted. No effect on an ambiguous key.
  void move(const std::string& key, const std::string& value, const std::string& canon);
  bool find(const std::string& key, std::string& value);  // false for unknown and ambiguous keys
  // The form a canonical key is kept in: itself up to kMaxKeyBytes, else '#' and its MD5, so a
  // client's long values cannot grow what remembers them (here and in LookupIndex's sets).
  static std::string storedKey(const std::string& key);
  // A value not learned yet (a transaction's, until it commits) that differs from the one held:
  // the key becomes ambiguous now, as learn() would make it. Returns true when it did.
  bool refute(const std::string& key, const std::string& canon);
  void forget(const std::string& key);                     // drops the value; ambiguity stays
  // Returns true when the key was not ambiguous before.
  bool markAmbiguous(const std::string& key);
  bool isAmbiguous(const std::string& key);
  void clear();  // forgets everything, ambiguity included (an explicit reset)
  void forgetAll();  // drops every value; ambiguity stays
  // A reply that provably holds every document of the key showed one value: it replaces whatever
  // was held, ambiguity included (the documents agree now).
  void settle(const std::string& key, const std::string& value, const std::string& canon);
  bool suspended() const { return suspended_.load(std::memory_order_relaxed); }
  MappingCounters counters() const;

 private:
  struct Value {  // an interned added value, shared by every entry (of any stripe) that maps to it
    std::string bson, canon;
    size_t refs = 0;
  };
  struct Entry {
    std::string key;  // the stored key (a digest when the canonical key is long)
    Value* value;
  };
  struct Stripe {
    std::mutex mutex;
    size_t capacity = 0;     // this stripe's share of the entries: the shares add up to `capacity`
    size_t table_bytes = 0;  // its hash tables' bucket arrays, as last charged
    std::list<Entry> lru;    // most recent first; never holds an ambiguous key
    std::unordered_map<std::string_view, std::list<Entry>::iterator> index;  // views Entry::key
    std::unordered_set<std::string> ambiguous;  // counts against the bounds, never evicted
  };
  Stripe& stripeFor(const std::string& stored);
  // Makes room in `s` (locked) for one more entry of `need` bytes, evicting its least recently
  // used; false when only ambiguous keys are left. The byte bound is the store's (`bytes_`): keys
  // are spread evenly over the stripes, so each evicts about its share.
  bool makeRoom(Stripe& s, size_t need);
  void evictOldest(Stripe& s);
  // The interned value for (value, canon), created (and charged) when new; `release` frees it with
  // its last entry. Under values_mutex_, taken after a stripe's lock, never before.
  Value* intern(const std::string& value, const std::string& canon);
  void release(Value* v);
  size_t valueBytesIfNew(const std::string& canon, const std::string& value);
  void erase(Stripe& s, std::list<Entry>::iterator it);
  void insertFront(Stripe& s, const std::string& stored, const std::string& value, const std::string& canon);
  void chargeTables(Stripe& s);  // after `s`'s tables changed (locked)
  static size_t entryBytes(size_t keyLength);
  static size_t valueBytes(size_t bsonLength, size_t canonLength);
  static size_t ambiguousBytes(size_t keyLength);

  static constexpr size_t kMaxStripes = 16;
  size_t capacity_;
  size_t max_bytes_;
  size_t stripe_count_;
  std::array<Stripe, kMaxStripes> stripes_;
  std::mutex values_mutex_;
  std::unordered_map<std::string_view, std::unique_ptr<Value>> values_;  // by canon, views Value::canon
  size_t values_table_bytes_ = 0;  // values_'s bucket array, as last charged
  std::atomic<size_t> bytes_{0};   // everything: entries, values, ambiguous keys, bucket arrays
  std::atomic<bool> suspended_{false};
  std::atomic<uint64_t> hits_{0}, misses_{0}, learned_{0}, corrected_{0}, evicted_{0}, forgotten_{0}, moved_{0};
  std::atomic<uint64_t> keys_hashed_{0}, values_too_long_{0};
};

}  // namespace shardscope::rewrite
