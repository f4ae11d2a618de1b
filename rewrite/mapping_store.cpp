#include "rewrite/mapping_store.h"

#include <algorithm>

#include "routing/md5.h"

namespace shardscope::rewrite {
namespace {

// What glibc's malloc takes for a request of n bytes: one size word, 16-byte steps, 32 at least.
constexpr size_t chunk(size_t n) { return std::max<size_t>(32, (n + 8 + 15) & ~size_t{15}); }
// A std::string's own buffer beyond the object (none within the small-string buffer).
constexpr size_t heap(size_t length) { return length > 15 ? chunk(length + 1) : 0; }
// A node of a hash table with cached hash codes: next pointer, element, hash.
template <typename Element>
constexpr size_t hashNode() { return chunk(sizeof(void*) + sizeof(Element) + sizeof(size_t)); }

template <typename Entry>
constexpr size_t listNode() { return chunk(2 * sizeof(void*) + sizeof(Entry)); }

// Bytes of a bucket array of n buckets (a table of one bucket uses the one built in).
size_t bucketBytes(size_t n) { return n > 1 ? chunk(n * sizeof(void*)) : 0; }

}  // namespace

MappingStore::MappingStore(size_t capacity, size_t maxBytes)
    : capacity_(capacity), max_bytes_(maxBytes), stripe_count_(std::clamp<size_t>(capacity, 1, kMaxStripes)) {
  // Each stripe gets its share of the entries, and the shares add up to exactly `capacity`.
  for (size_t i = 0; i < stripe_count_; ++i)
    stripes_[i].capacity = capacity / stripe_count_ + (i < capacity % stripe_count_ ? 1 : 0);
}

std::string MappingStore::storedKey(const std::string& key) {
  if (key.size() <= kMaxKeyBytes) return key;
  // '#' starts no canonical key (they start with their type's letter), so a digest never
  // collides with a short key.
  uint8_t digest[16];
  routing::Md5 md5;
  md5.update(key.data(), key.size());
  md5.finish(digest);
  std::string stored(1, '#');
  stored.append(reinterpret_cast<const char*>(digest), sizeof digest);
  return stored;
}

MappingStore::Stripe& MappingStore::stripeFor(const std::string& stored) {
  return stripes_[std::hash<std::string>{}(stored) % stripe_count_];
}

// Bytes of one entry (list node, key buffer, index node), of one interned value (object, its two
// buffers, its node in `values_`) and of one ambiguous key.
size_t MappingStore::entryBytes(size_t keyLength) {
  return listNode<Entry>() + heap(keyLength) + hashNode<decltype(Stripe::index)::value_type>();
}
size_t MappingStore::valueBytes(size_t bsonLength, size_t canonLength) {
  return chunk(sizeof(Value)) + heap(bsonLength) + heap(canonLength) + hashNode<decltype(values_)::value_type>();
}
size_t MappingStore::ambiguousBytes(size_t keyLength) { return hashNode<std::string>() + heap(keyLength); }

void MappingStore::chargeTables(Stripe& s) {
  const size_t now = bucketBytes(s.index.bucket_count()) + bucketBytes(s.ambiguous.bucket_count());
  bytes_ += now;
  bytes_ -= s.table_bytes;
  s.table_bytes = now;
}

size_t MappingStore::valueBytesIfNew(const std::string& canon, const std::string& value) {
  std::lock_guard lock(values_mutex_);
  return values_.count(canon) ? 0 : valueBytes(value.size(), canon.size());
}

MappingStore::Value* MappingStore::intern(const std::string& value, const std::string& canon) {
  std::lock_guard lock(values_mutex_);
  if (auto it = values_.find(canon); it != values_.end()) {
    ++it->second->refs;
    return it->second.get();
  }
  auto v = std::make_unique<Value>();
  v->bson = value;
  v->canon = canon;
  v->refs = 1;
  Value* raw = v.get();
  values_.emplace(std::string_view(raw->canon), std::move(v));
  const size_t table = bucketBytes(values_.bucket_count());
  bytes_ += valueBytes(value.size(), canon.size()) + table;
  bytes_ -= values_table_bytes_;
  values_table_bytes_ = table;
  return raw;
}

void MappingStore::release(Value* v) {
  std::lock_guard lock(values_mutex_);
  if (--v->refs) return;
  bytes_ -= valueBytes(v->bson.size(), v->canon.size());
  values_.erase(values_.find(std::string_view(v->canon)));  // destroys *v
}

void MappingStore::erase(Stripe& s, std::list<Entry>::iterator it) {
  bytes_ -= entryBytes(it->key.size());
  release(it->value);
  s.index.erase(std::string_view(it->key));
  s.lru.erase(it);
}

void MappingStore::evictOldest(Stripe& s) {
  erase(s, std::prev(s.lru.end()));
  evicted_.fetch_add(1, std::memory_order_relaxed);
}

bool MappingStore::makeRoom(Stripe& s, size_t need) {
  auto fits = [&] { return s.lru.size() + s.ambiguous.size() < s.capacity && bytes_.load() + need <= max_bytes_; };
  while (!fits() && !s.lru.empty()) evictOldest(s);
  return fits();
}

void MappingStore::insertFront(Stripe& s, const std::string& stored, const std::string& value, const std::string& canon) {
  Value* v = intern(value, canon);
  s.lru.push_front({stored, v});
  s.index.emplace(std::string_view(s.lru.front().key), s.lru.begin());
  bytes_ += entryBytes(stored.size());
  chargeTables(s);
  // A table that grew its buckets, a value evicted while making room, or another stripe that
  // learned at the same moment may pass the bound by a little: this stripe's oldest entries make
  // up for it (never the new one).
  while (bytes_.load() > max_bytes_ && s.lru.size() > 1) evictOldest(s);
}

MappingStore::Learn MappingStore::learn(const std::string& key, const std::string& value, const std::string& canon) {
  const std::string stored = storedKey(key);
  auto& s = stripeFor(stored);
  std::lock_guard lock(s.mutex);
  if (s.ambiguous.count(stored)) return Learn::Ambiguous;
  if (auto it = s.index.find(stored); it != s.index.end()) {
    if (it->second->value->canon != canon) {
      // Two different values for one lookup value: the rule's assertion does not hold for it.
      erase(s, it->second);
      s.ambiguous.insert(stored);  // the erased entry's slot
      bytes_ += ambiguousBytes(stored.size());
      chargeTables(s);
      corrected_.fetch_add(1, std::memory_order_relaxed);
      return Learn::Contradicted;
    }
    s.lru.splice(s.lru.begin(), s.lru, it->second);
    learned_.fetch_add(1, std::memory_order_relaxed);
    return Learn::Unchanged;
  }
  if (value.size() > kMaxValueBytes) {
    values_too_long_.fetch_add(1, std::memory_order_relaxed);
    return Learn::TooLong;
  }
  if (!makeRoom(s, entryBytes(stored.size()) + valueBytesIfNew(canon, value))) return Learn::NoRoom;
  insertFront(s, stored, value, canon);
  if (stored.size() != key.size()) keys_hashed_.fetch_add(1, std::memory_order_relaxed);
  learned_.fetch_add(1, std::memory_order_relaxed);
  return Learn::Learned;
}

bool MappingStore::refute(const std::string& key, const std::string& canon) {
  const std::string stored = storedKey(key);
  auto& s = stripeFor(stored);
  std::lock_guard lock(s.mutex);
  auto it = s.index.find(stored);
  if (it == s.index.end() || it->second->value->canon == canon) return false;
  erase(s, it->second);
  s.ambiguous.insert(stored);  // the erased entry's slot
  bytes_ += ambiguousBytes(stored.size());
  chargeTables(s);
  corrected_.fetch_add(1, std::memory_order_relaxed);
  return true;
}

void MappingStore::move(const std::string& key, const std::string& value, const std::string& canon) {
  const std::string stored = storedKey(key);
  auto& s = stripeFor(stored);
  std::lock_guard lock(s.mutex);
  if (s.ambiguous.count(stored)) return;
  moved_.fetch_add(1, std::memory_order_relaxed);
  if (auto it = s.index.find(stored); it != s.index.end()) erase(s, it->second);
  if (value.size() > kMaxValueBytes) {
    values_too_long_.fetch_add(1, std::memory_order_relaxed);
    return;
  }
  if (!makeRoom(s, entryBytes(stored.size()) + valueBytesIfNew(canon, value))) return;
  insertFront(s, stored, value, canon);
}

bool MappingStore::find(const std::string& key, std::string& value) {
  const std::string stored = storedKey(key);
  auto& s = stripeFor(stored);
  std::lock_guard lock(s.mutex);
  auto it = s.index.find(stored);
  if (it == s.index.end() || suspended()) {
    misses_.fetch_add(1, std::memory_order_relaxed);
    return false;
  }
  s.lru.splice(s.lru.begin(), s.lru, it->second);
  value = it->second->value->bson;
  hits_.fetch_add(1, std::memory_order_relaxed);
  return true;
}

void MappingStore::forget(const std::string& key) {
  const std::string stored = storedKey(key);
  auto& s = stripeFor(stored);
  std::lock_guard lock(s.mutex);
  if (auto it = s.index.find(stored); it != s.index.end()) {
    erase(s, it->second);
    forgotten_.fetch_add(1, std::memory_order_relaxed);
  }
}

bool MappingStore::markAmbiguous(const std::string& key) {
  const std::string stored = storedKey(key);
  auto& s = stripeFor(stored);
  std::lock_guard lock(s.mutex);
  if (s.ambiguous.count(stored)) return false;
  if (auto it = s.index.find(stored); it != s.index.end()) {
    erase(s, it->second);
  }
  if (!makeRoom(s, ambiguousBytes(stored.size()))) {
    // Only ambiguous values left and no room to remember one more: the assertion fails for so
    // many values that the rule stops rewriting altogether (until reset).
    suspended_.store(true, std::memory_order_relaxed);
    return true;
  }
  s.ambiguous.insert(stored);
  bytes_ += ambiguousBytes(stored.size());
  chargeTables(s);
  corrected_.fetch_add(1, std::memory_order_relaxed);
  return true;
}

bool MappingStore::isAmbiguous(const std::string& key) {
  const std::string stored = storedKey(key);
  auto& s = stripeFor(stored);
  std::lock_guard lock(s.mutex);
  return s.ambiguous.count(stored) != 0 || suspended();
}

void MappingStore::clear() {
  // Every stripe locked (in order) before the shared values go: no entry may point at them.
  std::array<std::unique_lock<std::mutex>, kMaxStripes> locks;
  for (size_t i = 0; i < stripe_count_; ++i) locks[i] = std::unique_lock(stripes_[i].mutex);
  for (size_t i = 0; i < stripe_count_; ++i) {
    auto& s = stripes_[i];
    // Swapped with empty containers: clear() would keep the bucket arrays.
    decltype(s.index)().swap(s.index);
    s.lru.clear();
    decltype(s.ambiguous)().swap(s.ambiguous);
    s.table_bytes = 0;
  }
  std::lock_guard lock(values_mutex_);
  decltype(values_)().swap(values_);
  values_table_bytes_ = 0;
  bytes_ = 0;
  suspended_.store(false, std::memory_order_relaxed);
}

void MappingStore::forgetAll() {
  for (size_t i = 0; i < stripe_count_; ++i) {
    auto& s = stripes_[i];
    std::lock_guard lock(s.mutex);
    forgotten_.fetch_add(s.lru.size(), std::memory_order_relaxed);
    while (!s.lru.empty()) erase(s, s.lru.begin());
    chargeTables(s);
  }
}

void MappingStore::settle(const std::string& key, const std::string& value, const std::string& canon) {
  {
    const std::string stored = storedKey(key);
    auto& s = stripeFor(stored);
    std::lock_guard lock(s.mutex);
    if (s.ambiguous.erase(stored)) {
      bytes_ -= ambiguousBytes(stored.size());
      chargeTables(s);
    }
  }
  move(key, value, canon);
}

MappingCounters MappingStore::counters() const {
  MappingCounters c;
  for (size_t i = 0; i < stripe_count_; ++i) {
    auto& s = const_cast<Stripe&>(stripes_[i]);
    std::lock_guard lock(s.mutex);
    c.size += s.lru.size();
    c.ambiguous += s.ambiguous.size();
  }
  c.capacity = capacity_;
  c.bytes = bytes_.load();
  c.max_bytes = max_bytes_;
  c.hits = hits_.load();
  c.misses = misses_.load();
  c.learned = learned_.load();
  c.corrected = corrected_.load();
  c.evicted = evicted_.load();
  c.forgotten = forgotten_.load();
  c.moved = moved_.load();
  c.keys_hashed = keys_hashed_.load();
  c.values_too_long = values_too_long_.load();
  c.suspended = suspended();
  return c;
}

}  // namespace shardscope::rewrite
