#include "rewrite/lookup_mapping.h"

#include <algorithm>
#include <charconv>
#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <functional>

#include "common/command_fields.h"
#include "common/shell_json.h"
#include "rewrite/path_values.h"

namespace shardscope::rewrite {

std::string canonicalValues(const bson_t* flat) {
  std::string canon;
  bson_iter_t f;
  if (!bson_iter_init(&f, flat)) return {};
  while (bson_iter_next(&f)) {
    std::string k = canonicalValueKey(f);
    if (k.empty()) return {};
    canon += std::to_string(k.size()) + ':' + k;
  }
  return canon;
}

bool LookupIndex::addedValues(const bson_t* doc, std::string& value) const {
  bson_t values = BSON_INITIALIZER;
  bool ok = true;
  for (const auto& field : rule_.add_fields) {
    bson_iter_t f;
    if (!bson_iter_init(&f, doc) || !bson_iter_find_descendant(&f, field.c_str(), &f) || canonicalValueKey(f).empty()) {
      ok = false;
      break;
    }
    bson_append_iter(&values, field.c_str(), static_cast<int>(field.size()), &f);
  }
  if (ok) value.assign(reinterpret_cast<const char*>(bson_get_data(&values)), values.len);
  bson_destroy(&values);
  return ok;
}

const bson_t* LookupIndex::Compact::get() {
  if (bytes.empty() || !bson_init_static(&doc_, reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size()))
    return nullptr;
  return &doc_;
}

LookupIndex::Compact LookupIndex::extract(const bson_t* doc) const {
  Compact c;
  bson_t out = BSON_INITIALIZER;
  if (rule_.lookup_field.find('.') == std::string::npos) {
    bson_iter_t it;
    if (!bson_iter_init_find(&it, doc, rule_.lookup_field.c_str())) {
      bson_destroy(&out);
      return c;
    }
    if (BSON_ITER_HOLDS_ARRAY(&it)) lookup_arrays_seen_.store(true, std::memory_order_relaxed);
    bson_append_iter(&out, "l", 1, &it);
  } else {
    // A dotted path may cross arrays ({order: [{id: X}]}): every value it reaches, as an array.
    bson_t values;
    bson_append_array_begin(&out, "l", 1, &values);
    const PathValues reached = appendPathValues(*doc, rule_.lookup_field, values);
    bson_append_array_end(&out, &values);
    if (reached.crossed_array) lookup_arrays_seen_.store(true, std::memory_order_relaxed);
    if (!reached.found) {
      bson_destroy(&out);
      return c;
    }
  }
  std::string value;
  if (addedValues(doc, value)) {
    bson_t v;
    if (bson_init_static(&v, reinterpret_cast<const uint8_t*>(value.data()), value.size())) bson_append_document(&out, "v", 1, &v);
  }
  c.bytes.assign(reinterpret_cast<const char*>(bson_get_data(&out)), out.len);
  bson_destroy(&out);
  return c;
}

bool LookupIndex::learnOne(const bson_iter_t& lookupValue, const std::string* value, const std::string* canon) {
  std::string key = canonicalValueKey(lookupValue);
  if (key.empty()) {
    // A decimal is never mapped, but it may equal a mapped number: that number's documents are
    // no longer all known to carry one customer.
    if (BSON_ITER_HOLDS_DECIMAL128(&lookupValue)) markAmbiguous(lookupValue);
    return false;
  }
  if (!value) {  // this lookup value also matches a document the added fields cannot pin
    noteChange(key);
    if (store_.markAmbiguous(key) && on_ambiguous) on_ambiguous(lookupValue);
    return false;
  }
  if (unsettled(key)) {
    // One document no longer speaks for the others, but it may be a new line that what would
    // settle the order (a complete read, an updateMany of the order) in flight does not cover.
    noteChange(key);
    return false;
  }
  switch (store_.learn(key, *value, *canon)) {
    case MappingStore::Learn::Contradicted:
      noteChange(key);
      if (on_ambiguous) on_ambiguous(lookupValue);
      return false;
    case MappingStore::Learn::Ambiguous:
    case MappingStore::Learn::NoRoom:
    case MappingStore::Learn::TooLong: return false;
    case MappingStore::Learn::Learned: noteChange(key); return true;  // a new line the reply in flight may not show
    default: return true;
  }
}

bool LookupIndex::learnCompact(const bson_t* compact, bool confirmedInsert) {
  bson_iter_t l, v;
  if (!compact || !bson_iter_init_find(&l, compact, "l")) return false;
  std::string value, canon;
  bson_t added;
  if (bson_iter_init_find(&v, compact, "v") && BSON_ITER_HOLDS_DOCUMENT(&v) && common::documentOrArray(v, added)) {
    canon = canonicalValues(&added);
    if (!canon.empty()) value.assign(reinterpret_cast<const char*>(bson_get_data(&added)), added.len);
  }
  const std::string* mapped = canon.empty() ? nullptr : &value;
  bool clean = true;
  auto one = [&](const bson_iter_t& x) {
    bool ok = learnOne(x, mapped, &canon);
    if (ok && confirmedInsert && on_learned_from_insert) on_learned_from_insert(x, &added);
    clean = clean && ok;
  };
  if (BSON_ITER_HOLDS_ARRAY(&l)) {
    // {orderId: [a, b]} matches an equality on a and on b: each maps to this document's fields.
    bson_iter_t element;
    if (!bson_iter_recurse(&l, &element)) return false;
    while (bson_iter_next(&element)) one(element);
  } else {
    one(l);
  }
  return clean && mapped;
}

void LookupIndex::refuteContradicted(const bson_t* compact) {
  bson_iter_t l, v;
  if (!compact || !bson_iter_init_find(&l, compact, "l")) return;
  std::string canon;
  bson_t added;
  if (bson_iter_init_find(&v, compact, "v") && BSON_ITER_HOLDS_DOCUMENT(&v) && common::documentOrArray(v, added))
    canon = canonicalValues(&added);
  auto one = [&](const bson_iter_t& x) {
    const std::string key = canonicalValueKey(x);
    if (key.empty()) {
      if (BSON_ITER_HOLDS_DECIMAL128(&x)) markAmbiguous(x);  // as learnOne: it may equal mapped numbers
      return;
    }
    const bool refuted = canon.empty() ? store_.markAmbiguous(key) : store_.refute(key, canon);
    if (refuted) noteChange(key);
    if (refuted && on_ambiguous) on_ambiguous(x);
  };
  if (!BSON_ITER_HOLDS_ARRAY(&l)) return one(l);
  bson_iter_t element;
  if (bson_iter_recurse(&l, &element))
    while (bson_iter_next(&element)) one(element);
}

void LookupIndex::forEachEqual(const bson_iter_t& lookupValue, const std::function<void(const bson_iter_t&, const std::string&)>& fn) {
  if (std::string key = canonicalValueKey(lookupValue); !key.empty()) return fn(lookupValue, key);
  bson_t neighbours = BSON_INITIALIZER;
  appendDecimalNeighbours(lookupValue, neighbours);
  bson_iter_t n;
  if (bson_iter_init(&n, &neighbours))
    while (bson_iter_next(&n)) fn(n, canonicalValueKey(n));
  bson_destroy(&neighbours);
}

void LookupIndex::moved(const bson_iter_t& lookupValue, const bson_t* addedFields) {
  std::string canon = addedFields ? canonicalValues(addedFields) : std::string();
  forEachEqual(lookupValue, [&](const bson_iter_t& v, const std::string& key) {
    noteChange(key);
    if (!canon.empty() && !BSON_ITER_HOLDS_DECIMAL128(&lookupValue)) {
      store_.move(key, std::string(reinterpret_cast<const char*>(bson_get_data(addedFields)), addedFields->len), canon);
      return;
    }
    store_.forget(key);
    if (on_dropped) on_dropped(v);
  });
}

void LookupIndex::markAmbiguous(const bson_iter_t& lookupValue) {
  forEachEqual(lookupValue, [&](const bson_iter_t& v, const std::string& key) {
    noteChange(key);
    if (store_.markAmbiguous(key) && on_ambiguous) on_ambiguous(v);
  });
}

void LookupIndex::unsettle(const bson_iter_t& lookupValue) {
  forEachEqual(lookupValue, [&](const bson_iter_t& v, const std::string& key) {
    noteChange(key);
    store_.forget(key);
    bool full;
    const std::string stored = MappingStore::storedKey(key);
    {
      std::lock_guard lock(unsettled_mutex_);
      full = unsettled_.size() >= rule_.capacity && !unsettled_.count(stored);
      if (!full) unsettled_.insert(stored);
      unsettled_count_.store(unsettled_.size(), std::memory_order_relaxed);
    }
    // No room to remember it: ambiguous is the stricter state (counted against the capacity).
    if (full && store_.markAmbiguous(key) && on_ambiguous) on_ambiguous(v);
    if (!full && on_dropped) on_dropped(v);
  });
  stats_.onEvent("unsettled by a change that may not cover every document");
}

void LookupIndex::noteChange(const std::string& key) {
  stamps_[std::hash<std::string>{}(key) % kStampSlots].fetch_add(1, std::memory_order_relaxed);
}

uint64_t LookupIndex::changeStamp(const bson_t* values) const {
  uint64_t stamp = stamp_all_.load(std::memory_order_relaxed);
  bson_iter_t v;
  if (values && bson_iter_init(&v, values))
    while (bson_iter_next(&v))
      stamp += stamps_[std::hash<std::string>{}(canonicalValueKey(v)) % kStampSlots].load(std::memory_order_relaxed);
  return stamp;
}

void LookupIndex::unsettleAll(bool tell) {
  stamp_all_.fetch_add(1, std::memory_order_relaxed);
  all_unsettled_.store(true, std::memory_order_relaxed);
  store_.forgetAll();
  if (tell && on_unsettled_all) on_unsettled_all();
  stats_.onEvent("all values unsettled by a change that names no lookup value");
}

bool LookupIndex::unsettled(const std::string& key) {
  if (all_unsettled_.load(std::memory_order_relaxed)) return true;
  if (unsettled_count_.load(std::memory_order_relaxed) == 0) return false;
  const std::string stored = MappingStore::storedKey(key);
  std::lock_guard lock(unsettled_mutex_);
  return unsettled_.count(stored) != 0;
}

void LookupIndex::learnComplete(const bson_iter_t& lookupValue, const bson_t* addedFields) {
  std::string canon = addedFields ? canonicalValues(addedFields) : std::string();
  forEachEqual(lookupValue, [&](const bson_iter_t& v, const std::string& key) {
    if (canon.empty() || BSON_ITER_HOLDS_DECIMAL128(&lookupValue)) {
      noteChange(key);
      if (store_.markAmbiguous(key) && on_ambiguous) on_ambiguous(v);
      return;
    }
    const std::string stored = MappingStore::storedKey(key);
    {
      std::lock_guard lock(unsettled_mutex_);
      unsettled_.erase(stored);
      unsettled_count_.store(unsettled_.size(), std::memory_order_relaxed);
    }
    store_.settle(key, std::string(reinterpret_cast<const char*>(bson_get_data(addedFields)), addedFields->len), canon);
    stats_.onEvent("learned from a reply holding every document");
  });
}

bool LookupIndex::uniqueHolds(const std::vector<std::string>& keys) {
  if (!rule_.unique || unique_refuted_.load(std::memory_order_relaxed)) return false;
  if (several_documents_count_.load(std::memory_order_relaxed) == 0) return true;
  for (const auto& key : keys) {
    const std::string stored = MappingStore::storedKey(key);
    std::lock_guard lock(unsettled_mutex_);
    if (several_documents_.count(stored)) return false;
  }
  return true;
}

void LookupIndex::refuteUnique(const std::string& key) {
  if (!rule_.unique || unique_refuted_.load(std::memory_order_relaxed)) return;
  bool added = false, full = false;
  std::string stored = MappingStore::storedKey(key);
  {
    std::lock_guard lock(unsettled_mutex_);
    full = several_documents_.size() >= rule_.capacity && !several_documents_.count(stored);
    if (!full) added = several_documents_.insert(std::move(stored)).second;
    several_documents_count_.store(several_documents_.size(), std::memory_order_relaxed);
  }
  if (full && !unique_refuted_.exchange(true, std::memory_order_relaxed))
    stats_.onEvent("unique refuted for every value: more values with several documents than the capacity");
  if (added) stats_.onEvent("unique refuted for one value: two documents of it seen");
}

void LookupIndex::reset() {
  store_.clear();
  unique_refuted_.store(false, std::memory_order_relaxed);
  std::lock_guard lock(unsettled_mutex_);
  several_documents_.clear();
  several_documents_count_.store(0, std::memory_order_relaxed);
  unsettled_.clear();
  unsettled_count_.store(0, std::memory_order_relaxed);
  all_unsettled_.store(false, std::memory_order_relaxed);
}

bool LookupIndex::valuesFor(const bson_iter_t& lookupValue, std::string& addDoc) {
  std::string key = canonicalValueKey(lookupValue);
  if (key.empty()) return false;
  if (store_.find(key, addDoc)) return true;
  if (on_miss && !store_.isAmbiguous(key) && !unsettled(key)) on_miss(lookupValue);
  return false;
}

bool LookupIndex::loadFile(const std::string& path, size_t& loaded, std::string& error) {
  errno = 0;
  std::ifstream in(path);
  if (!in) {
    error = "cannot read file " + path + ": " + (errno ? std::strerror(errno) : "open failed");
    return false;
  }
  loaded = 0;
  std::string line;
  for (size_t number = 1; std::getline(in, line); ++number) {
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    bson_t doc;
    std::string why;
    if (!common::parseShellJson(line, &doc, why)) {  // {orderId: "O1", customerId: "C1"} as mongosh writes it
      error = path + ":" + std::to_string(number) + ": not a JSON document: " + why;
      return false;
    }
    bson_iter_t lookup;
    std::string value;
    bool ok = bson_iter_init(&lookup, &doc) && bson_iter_find_descendant(&lookup, rule_.lookup_field.c_str(), &lookup) &&
              !canonicalValueKey(lookup).empty() && addedValues(&doc, value);
    if (ok) learnFromDocument(&doc);
    bson_destroy(&doc);
    if (!ok) {
      error = path + ":" + std::to_string(number) + ": needs '" + rule_.lookup_field + "' and every added field (" +
              [&] {
                std::string s;
                for (const auto& f : rule_.add_fields) s += (s.empty() ? "" : ", ") + f;
                return s;
              }() +
              ") with plain values";
      return false;
    }
    ++loaded;
  }
  return true;
}

}  // namespace shardscope::rewrite
