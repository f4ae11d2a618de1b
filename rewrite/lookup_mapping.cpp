#include "rewrite/lookup_mapping.h"

#include <algorithm>
#include <charconv>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <functional>

#include "common/command_fields.h"

namespace shardscope::rewrite {

namespace {

// A decimal number as sign, coefficient digits without leading or trailing zeros, and exponent.
struct Normalized {
  bool negative = false;
  std::string digits;  // empty for zero
  int64_t exponent = 0;
  bool operator==(const Normalized&) const = default;
};

bool normalize(std::string_view s, Normalized& out) {
  out = {};
  size_t i = 0;
  if (i < s.size() && (s[i] == '-' || s[i] == '+')) out.negative = s[i++] == '-';
  int64_t fraction = 0;
  bool dot = false, any = false;
  for (; i < s.size() && (std::isdigit(static_cast<unsigned char>(s[i])) || s[i] == '.'); ++i) {
    if (s[i] == '.') {
      dot = true;
      continue;
    }
    any = true;
    out.digits.push_back(s[i]);
    if (dot) ++fraction;
  }
  if (!any) return false;
  if (i < s.size() && (s[i] == 'e' || s[i] == 'E')) {
    auto [p, ec] = std::from_chars(s.data() + i + 1 + (i + 1 < s.size() && s[i + 1] == '+'), s.data() + s.size(), out.exponent);
    if (ec != std::errc() || p != s.data() + s.size()) return false;
  } else if (i != s.size()) {
    return false;
  }
  out.exponent -= fraction;
  out.digits.erase(0, std::min(out.digits.find_first_not_of('0'), out.digits.size()));
  while (!out.digits.empty() && out.digits.back() == '0') {
    out.digits.pop_back();
    ++out.exponent;
  }
  if (out.digits.empty()) out = {};  // -0 == 0
  return true;
}

}  // namespace

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
    case BSON_TYPE_DECIMAL128: {
      // MongoDB compares decimals with the other numbers by value: NumberDecimal("5") is the
      // orderId 5, and NumberDecimal("0.5") equals the double 0.5 (but "0.1" no double).
      bson_decimal128_t dec;
      char text[BSON_DECIMAL128_STRING];
      bson_iter_decimal128(&value, &dec);
      bson_decimal128_to_string(&dec, text);
      std::string_view str(text);
      if (str.find("NaN") != std::string_view::npos) return {};
      if (str.find("Inf") != std::string_view::npos) {
        appendNumber(str[0] == '-' ? -HUGE_VAL : HUGE_VAL, 0, false);
        break;
      }
      Normalized n;
      if (!normalize(str, n)) return {};
      if (n.digits.empty()) {
        appendNumber(0, 0, true);
        break;
      }
      if (n.exponent >= 0 && static_cast<int64_t>(n.digits.size()) + n.exponent <= 18) {
        int64_t v = 0;
        for (char c : n.digits) v = v * 10 + (c - '0');
        for (int64_t e = 0; e < n.exponent; ++e) v *= 10;
        appendNumber(0, n.negative ? -v : v, true);
        break;
      }
      // Equal to a double only when the double's exact expansion has the same digits.
      double d = std::strtod(std::string(str).c_str(), nullptr);
      char exact[64];
      std::snprintf(exact, sizeof exact, "%.40e", d);
      Normalized asDouble;
      if (std::isfinite(d) && normalize(exact, asDouble) && asDouble == n) {
        bool integral = d == std::trunc(d) && std::fabs(d) < 9.2e18;
        appendNumber(d, integral ? static_cast<int64_t>(d) : 0, integral);
        break;
      }
      key = std::string("D") + (n.negative ? "-" : "+") + n.digits + "e" + std::to_string(n.exponent);
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
      return {};  // documents, arrays, regexes...: not mapped (equality on them is not one value)
  }
  return key;
}

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
  bson_iter_t it;
  if (!bson_iter_init(&it, doc) || !bson_iter_find_descendant(&it, rule_.lookup_field.c_str(), &it)) return c;
  bson_t out = BSON_INITIALIZER;
  bson_append_iter(&out, "l", 1, &it);
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
  if (key.empty()) return false;
  if (!value) {  // this lookup value also matches a document the added fields cannot pin
    if (store_.markAmbiguous(key) && on_ambiguous) on_ambiguous(lookupValue);
    return false;
  }
  switch (store_.learn(key, *value, *canon)) {
    case MappingStore::Learn::Contradicted:
      if (on_ambiguous) on_ambiguous(lookupValue);
      return false;
    case MappingStore::Learn::Ambiguous:
    case MappingStore::Learn::NoRoom:
    case MappingStore::Learn::TooLong: return false;
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

void LookupIndex::moved(const bson_iter_t& lookupValue, const bson_t* addedFields) {
  std::string key = canonicalValueKey(lookupValue);
  if (key.empty()) return;
  std::string canon = addedFields ? canonicalValues(addedFields) : std::string();
  if (!canon.empty()) {
    store_.move(key, std::string(reinterpret_cast<const char*>(bson_get_data(addedFields)), addedFields->len), canon);
    return;
  }
  store_.forget(key);
  if (on_dropped) on_dropped(lookupValue);
}

void LookupIndex::markAmbiguous(const bson_iter_t& lookupValue) {
  std::string key = canonicalValueKey(lookupValue);
  if (!key.empty() && store_.markAmbiguous(key) && on_ambiguous) on_ambiguous(lookupValue);
}

bool LookupIndex::valuesFor(const bson_iter_t& lookupValue, std::string& addDoc) {
  std::string key = canonicalValueKey(lookupValue);
  if (key.empty()) return false;
  if (store_.find(key, addDoc)) return true;
  if (on_miss && !store_.isAmbiguous(key)) on_miss(lookupValue);
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
