#include "routing/lookup_mapping.h"

#include <cmath>
#include <cstring>
#include <fstream>
#include <functional>

namespace shardscope::routing {

std::string canonicalValueKey(const bson_iter_t& value) {
  std::string key;
  auto type = bson_iter_type(&value);
  auto appendNumber = [&](double d, int64_t i, bool integral) {
    if (integral) {
      key.push_back('i');
      key.append(reinterpret_cast<const char*>(&i), 8);
    } else {
      key.push_back('d');
      key.append(reinterpret_cast<const char*>(&d), 8);
    }
  };
  switch (type) {
    case BSON_TYPE_INT32: appendNumber(0, bson_iter_int32(&value), true); break;
    case BSON_TYPE_INT64: appendNumber(0, bson_iter_int64(&value), true); break;
    case BSON_TYPE_DOUBLE: {
      double d = bson_iter_double(&value);
      if (std::isnan(d)) return {};
      bool integral = d == std::trunc(d) && std::fabs(d) < 9.2e18;
      appendNumber(d, integral ? static_cast<int64_t>(d) : 0, integral);
      break;
    }
    case BSON_TYPE_UTF8: {
      uint32_t len;
      const char* s = bson_iter_utf8(&value, &len);
      key.push_back('s');
      key.append(s, len);
      break;
    }
    case BSON_TYPE_OID:
      key.push_back('o');
      key.append(reinterpret_cast<const char*>(bson_iter_oid(&value)->bytes), 12);
      break;
    case BSON_TYPE_DATE_TIME: {
      int64_t ms = bson_iter_date_time(&value);
      key.push_back('t');
      key.append(reinterpret_cast<const char*>(&ms), 8);
      break;
    }
    case BSON_TYPE_BOOL: key = bson_iter_bool(&value) ? "b1" : "b0"; break;
    case BSON_TYPE_NULL: key = "n"; break;
    case BSON_TYPE_BINARY: {
      bson_subtype_t sub;
      uint32_t len;
      const uint8_t* data;
      bson_iter_binary(&value, &sub, &len, &data);
      key.push_back('x');
      key.push_back(static_cast<char>(sub));
      key.append(reinterpret_cast<const char*>(data), len);
      break;
    }
    default:
      return {};  // decimal, documents, arrays, regexes...: not mapped (rare as order ids)
  }
  return key;
}

MappingStore::MappingStore(size_t capacity)
    : per_stripe_capacity_(std::max<size_t>(1, (capacity + kStripes - 1) / kStripes)), capacity_(capacity) {}

MappingStore::Stripe& MappingStore::stripeFor(const std::string& key) {
  return stripes_[std::hash<std::string>{}(key) % kStripes];
}

bool MappingStore::learn(const std::string& key, const std::string& value) {
  auto& s = stripeFor(key);
  std::lock_guard lock(s.mutex);
  learned_.fetch_add(1, std::memory_order_relaxed);
  if (auto it = s.index.find(key); it != s.index.end()) {
    bool changed = it->second->second != value;
    it->second->second = value;
    s.lru.splice(s.lru.begin(), s.lru, it->second);
    if (changed) corrected_.fetch_add(1, std::memory_order_relaxed);
    return changed;
  }
  s.lru.emplace_front(key, value);
  s.index.emplace(key, s.lru.begin());
  if (s.lru.size() > per_stripe_capacity_) {
    s.index.erase(s.lru.back().first);
    s.lru.pop_back();
    evicted_.fetch_add(1, std::memory_order_relaxed);
  }
  return false;
}

bool MappingStore::find(const std::string& key, std::string& value) {
  auto& s = stripeFor(key);
  std::lock_guard lock(s.mutex);
  auto it = s.index.find(key);
  if (it == s.index.end()) {
    misses_.fetch_add(1, std::memory_order_relaxed);
    return false;
  }
  s.lru.splice(s.lru.begin(), s.lru, it->second);
  value = it->second->second;
  hits_.fetch_add(1, std::memory_order_relaxed);
  return true;
}

void MappingStore::forget(const std::string& key) {
  auto& s = stripeFor(key);
  std::lock_guard lock(s.mutex);
  if (auto it = s.index.find(key); it != s.index.end()) {
    s.lru.erase(it->second);
    s.index.erase(it);
    forgotten_.fetch_add(1, std::memory_order_relaxed);
  }
}

MappingCounters MappingStore::counters() const {
  MappingCounters c;
  for (auto& s : const_cast<std::array<Stripe, kStripes>&>(stripes_)) {
    std::lock_guard lock(s.mutex);
    c.size += s.lru.size();
  }
  c.capacity = capacity_;
  c.hits = hits_.load();
  c.misses = misses_.load();
  c.learned = learned_.load();
  c.corrected = corrected_.load();
  c.evicted = evicted_.load();
  c.forgotten = forgotten_.load();
  return c;
}

bool LookupIndex::learnFromDocument(const bson_t* doc) {
  bson_iter_t it;
  if (!bson_iter_init(&it, doc) || !bson_iter_find_descendant(&it, rule_.lookup_field.c_str(), &it)) return false;
  std::string key = canonicalValueKey(it);
  if (key.empty()) return false;
  bson_t values = BSON_INITIALIZER;
  for (const auto& field : rule_.add_fields) {
    bson_iter_t f;
    if (!bson_iter_init(&f, doc) || !bson_iter_find_descendant(&f, field.c_str(), &f) || BSON_ITER_HOLDS_ARRAY(&f)) {
      bson_destroy(&values);
      return false;
    }
    bson_append_iter(&values, field.c_str(), static_cast<int>(field.size()), &f);
  }
  store_.learn(key, std::string(reinterpret_cast<const char*>(bson_get_data(&values)), values.len));
  bson_destroy(&values);
  return true;
}

bool LookupIndex::valuesFor(const bson_iter_t& lookupValue, std::string& addDoc) {
  std::string key = canonicalValueKey(lookupValue);
  if (key.empty()) return false;
  if (store_.find(key, addDoc)) return true;
  if (on_miss) on_miss(lookupValue);
  return false;
}

bool LookupIndex::loadFile(const std::string& path, size_t& loaded, std::string& error) {
  std::ifstream in(path);
  if (!in) {
    error = path + ": cannot be read";
    return false;
  }
  loaded = 0;
  std::string line;
  for (size_t number = 1; std::getline(in, line); ++number) {
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    bson_t doc;
    bson_error_t err;
    if (!bson_init_from_json(&doc, line.c_str(), static_cast<ssize_t>(line.size()), &err)) {
      error = path + ":" + std::to_string(number) + ": not a JSON document: " + err.message;
      return false;
    }
    bool ok = learnFromDocument(&doc);
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

}  // namespace shardscope::routing
