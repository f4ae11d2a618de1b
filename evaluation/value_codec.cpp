#include "evaluation/value_codec.h"

#include <cmath>
#include <cstring>

#include "routing/bson_order.h"
#include "stats/query_shape.h"

namespace shardscope::evaluation {

std::string encodeValue(const bson_value_t& v) {
  bson_t doc = BSON_INITIALIZER;
  bson_append_value(&doc, "", 0, &v);
  std::string out(reinterpret_cast<const char*>(bson_get_data(&doc)), doc.len);
  bson_destroy(&doc);
  return out;
}

bool decodeValue(std::string_view encoded, bson_value_t& out) {
  bson_t doc;
  if (!bson_init_static(&doc, reinterpret_cast<const uint8_t*>(encoded.data()), encoded.size())) return false;
  bson_iter_t it;
  if (!bson_iter_init(&it, &doc) || !bson_iter_next(&it)) return false;
  out = *bson_iter_value(&it);
  return true;
}

uint64_t combineHash(uint64_t seed, uint64_t h) {
  return (seed ^ (h + 0x9E3779B97F4A7C15ull + (seed << 6) + (seed >> 2))) * 0xff51afd7ed558ccdull;
}

uint64_t valueHash(const bson_value_t& v) {
  const uint64_t rank = static_cast<uint64_t>(routing::canonicalType(v.value_type) + 2);
  auto bytes = [&](const void* p, size_t n) {
    return stats::hashBytes(std::string_view(static_cast<const char*>(p), n), rank * 0x100000001B3ull);
  };
  switch (v.value_type) {
    case BSON_TYPE_INT32:
    case BSON_TYPE_INT64:
    case BSON_TYPE_DOUBLE:
    case BSON_TYPE_DECIMAL128: {
      double d = v.value_type == BSON_TYPE_INT32   ? v.value.v_int32
                 : v.value_type == BSON_TYPE_INT64 ? static_cast<double>(v.value.v_int64)
                 : v.value_type == BSON_TYPE_DOUBLE ? v.value.v_double
                                                    : std::nan("");
      if (v.value_type == BSON_TYPE_INT64) return bytes(&v.value.v_int64, 8);
      if (std::isfinite(d) && d == std::trunc(d) && std::fabs(d) < 9.2e18) {
        int64_t i = static_cast<int64_t>(d);
        return bytes(&i, 8);
      }
      if (v.value_type == BSON_TYPE_DECIMAL128) return bytes(&v.value.v_decimal128, 16);
      return bytes(&d, 8);
    }
    case BSON_TYPE_UTF8:
      return bytes(v.value.v_utf8.str, v.value.v_utf8.len);
    case BSON_TYPE_SYMBOL:
      return bytes(v.value.v_symbol.symbol, v.value.v_symbol.len);
    case BSON_TYPE_OID:
      return bytes(v.value.v_oid.bytes, 12);
    case BSON_TYPE_DATE_TIME:
      return bytes(&v.value.v_datetime, 8);
    case BSON_TYPE_BOOL: {
      uint8_t b = v.value.v_bool ? 1 : 0;
      return bytes(&b, 1);
    }
    case BSON_TYPE_NULL:
    case BSON_TYPE_UNDEFINED:
    case BSON_TYPE_MINKEY:
    case BSON_TYPE_MAXKEY:
      return bytes("", 0);
    default: {
      std::string enc = encodeValue(v);
      return bytes(enc.data(), enc.size());
    }
  }
}

std::string displayValue(const bson_value_t& v, size_t max_chars) {
  bson_t doc = BSON_INITIALIZER;
  bson_append_value(&doc, "v", 1, &v);
  size_t len = 0;
  char* json = bson_as_relaxed_extended_json(&doc, &len);
  std::string s = json ? json : "";
  bson_free(json);
  bson_destroy(&doc);
  // {"v" : X } -> X
  auto colon = s.find(':');
  if (colon != std::string::npos && s.size() >= colon + 3) s = s.substr(colon + 2, s.size() - colon - 4);
  if (s.size() > max_chars) s = s.substr(0, max_chars) + "...";
  return s;
}

std::string hashLabel(uint64_t hash) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "#%012llx", static_cast<unsigned long long>(hash >> 16));
  return buf;
}

static const char kB64[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

std::string base64Encode(std::string_view in) {
  std::string out;
  out.reserve((in.size() + 2) / 3 * 4);
  size_t i = 0;
  for (; i + 2 < in.size(); i += 3) {
    uint32_t n = (uint8_t(in[i]) << 16) | (uint8_t(in[i + 1]) << 8) | uint8_t(in[i + 2]);
    out += kB64[n >> 18];
    out += kB64[(n >> 12) & 63];
    out += kB64[(n >> 6) & 63];
    out += kB64[n & 63];
  }
  if (i < in.size()) {
    uint32_t n = uint8_t(in[i]) << 16;
    if (i + 1 < in.size()) n |= uint8_t(in[i + 1]) << 8;
    out += kB64[n >> 18];
    out += kB64[(n >> 12) & 63];
    out += i + 1 < in.size() ? kB64[(n >> 6) & 63] : '=';
    out += '=';
  }
  return out;
}

bool base64Decode(std::string_view in, std::string& out) {
  out.clear();
  uint32_t acc = 0;
  int bits = 0;
  for (char c : in) {
    if (c == '=') break;
    const char* p = std::strchr(kB64, c);
    if (!p || !c) return false;
    acc = (acc << 6) | static_cast<uint32_t>(p - kB64);
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      out += static_cast<char>((acc >> bits) & 0xFF);
    }
  }
  return true;
}

}  // namespace shardscope::evaluation
