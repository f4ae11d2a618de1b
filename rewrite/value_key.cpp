#include "rewrite/value_key.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <string_view>

namespace shardscope::rewrite {
namespace {

// Every number equal to an int64 gets this key, whatever its BSON type.
std::string integerKey(int64_t i) {
  std::string key(1, 'i');
  key.append(reinterpret_cast<const char*>(&i), 8);
  return key;
}

std::string doubleKey(double d) {
  if (std::isnan(d)) return {};
  // [-2^63, 2^63) is exactly the int64 range: an integral double in it equals that long
  // (-2^63 included); no long equals an integral double outside it.
  if (d == std::trunc(d) && d >= -9223372036854775808.0 && d < 9223372036854775808.0)
    return integerKey(static_cast<int64_t>(d));
  if (d == 0) return integerKey(0);
  std::string key(1, 'd');
  key.append(reinterpret_cast<const char*>(&d), 8);
  return key;
}

// A decimal's value as an int64 when it is an integer in range (sign, digits, exponent parsed
// from the library's canonical text: "-1.23E+5", "123", "0.00").
bool decimalAsInteger(std::string_view s, int64_t& out) {
  bool negative = !s.empty() && s[0] == '-';
  if (negative || (!s.empty() && s[0] == '+')) s.remove_prefix(1);
  std::string digits;
  long exponent = 0;
  size_t i = 0;
  for (; i < s.size() && (std::isdigit(static_cast<unsigned char>(s[i])) || s[i] == '.'); ++i) {
    if (s[i] == '.') {
      for (size_t j = i + 1; j < s.size() && std::isdigit(static_cast<unsigned char>(s[j])); ++j) --exponent;
      continue;
    }
    digits.push_back(s[i]);
  }
  if (i < s.size() && (s[i] == 'E' || s[i] == 'e')) exponent += std::strtol(std::string(s.substr(i + 1)).c_str(), nullptr, 10);
  while (!digits.empty() && digits.back() == '0' && exponent < 0) digits.pop_back(), ++exponent;
  digits.erase(0, std::min(digits.find_first_not_of('0'), digits.size()));
  if (digits.empty()) return out = 0, true;
  if (exponent < 0 || static_cast<long>(digits.size()) + exponent > 19) return false;
  // Accumulate as a negative number so that -2^63 fits.
  __int128 v = 0;
  for (char c : digits) v = v * 10 + (c - '0');
  for (long e = 0; e < exponent; ++e) v *= 10;
  if (negative) v = -v;
  if (v < INT64_MIN || v > INT64_MAX) return false;
  out = static_cast<int64_t>(v);
  return true;
}

}  // namespace

std::string canonicalValueKey(const bson_iter_t& value) {
  std::string key;
  switch (bson_iter_type(&value)) {
    case BSON_TYPE_INT32: return integerKey(bson_iter_int32(&value));
    case BSON_TYPE_INT64: return integerKey(bson_iter_int64(&value));
    case BSON_TYPE_DOUBLE: return doubleKey(bson_iter_double(&value));
    case BSON_TYPE_UTF8:
    case BSON_TYPE_SYMBOL: {
      // MongoDB compares a symbol as the string it spells ("Symbol, String" are one type in its
      // comparison order): {orderId: "O1"} finds {orderId: Symbol("O1")} too.
      uint32_t len = 0;
      const char* s = BSON_ITER_HOLDS_UTF8(&value) ? bson_iter_utf8(&value, &len) : bson_iter_symbol(&value, &len);
      key.push_back('s');
      key.append(s, len);
      return key;
    }
    case BSON_TYPE_OID:
      key.push_back('o');
      key.append(reinterpret_cast<const char*>(bson_iter_oid(&value)->bytes), 12);
      return key;
    case BSON_TYPE_DATE_TIME: {
      int64_t ms = bson_iter_date_time(&value);
      key.push_back('t');
      key.append(reinterpret_cast<const char*>(&ms), 8);
      return key;
    }
    case BSON_TYPE_BOOL: return bson_iter_bool(&value) ? "b1" : "b0";
    case BSON_TYPE_BINARY: {
      bson_subtype_t sub;
      uint32_t len;
      const uint8_t* data;
      bson_iter_binary(&value, &sub, &len, &data);
      key.push_back('x');
      key.push_back(static_cast<char>(sub));
      key.append(reinterpret_cast<const char*>(data), len);
      return key;
    }
    default:
      return {};  // decimals, documents, arrays, regexes...: not one decidable value
  }
}

void appendDecimalNeighbours(const bson_iter_t& value, bson_t& out) {
  if (!BSON_ITER_HOLDS_DECIMAL128(&value)) return;
  bson_decimal128_t dec;
  char text[BSON_DECIMAL128_STRING];
  bson_iter_decimal128(&value, &dec);
  bson_decimal128_to_string(&dec, text);
  std::string_view s(text);
  if (s.find("NaN") != std::string_view::npos) return;
  const double nearest = s.find("Inf") != std::string_view::npos ? (s[0] == '-' ? -HUGE_VAL : HUGE_VAL)
                                                                : std::strtod(text, nullptr);  // correctly rounded
  BSON_APPEND_DOUBLE(&out, "0", nearest);
  int64_t exact;
  if (decimalAsInteger(s, exact)) BSON_APPEND_INT64(&out, "1", exact);
}

}  // namespace shardscope::rewrite
