#include "evaluation/value_codec.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "common/bson_order.h"
#include "common/query_shape.h"
#include "evaluation/long_value_sample.h"

namespace shardscope::evaluation {

namespace {

void encodeWithLibbson(const bson_value_t& v, std::string& out) {
  bson_t doc = BSON_INITIALIZER;
  bson_append_value(&doc, "", 0, &v);
  out.assign(reinterpret_cast<const char*>(bson_get_data(&doc)), doc.len);
  bson_destroy(&doc);
}

}  // namespace

void encodeValue(const bson_value_t& v, std::string& out) {
  // The common types are written here, byte for byte what bson_append_value writes for them: that
  // reuses `out`'s memory, where a bson_t would allocate for values past its inline buffer.
  auto put = [&](const void* p, size_t n) { out.append(static_cast<const char*>(p), n); };
  auto put32 = [&](uint32_t x) {
    x = BSON_UINT32_TO_LE(x);
    put(&x, 4);
  };
  auto put64 = [&](uint64_t x) {
    x = BSON_UINT64_TO_LE(x);
    put(&x, 8);
  };
  out.assign(4, '\0');  // the document's length, set at the end
  out.push_back(static_cast<char>(v.value_type));
  out.push_back('\0');  // the empty key
  bson_t doc;
  switch (v.value_type) {
    case BSON_TYPE_DOUBLE: {
      double d = BSON_DOUBLE_TO_LE(v.value.v_double);
      put(&d, 8);
      break;
    }
    case BSON_TYPE_INT32: put32(static_cast<uint32_t>(v.value.v_int32)); break;
    case BSON_TYPE_INT64: put64(static_cast<uint64_t>(v.value.v_int64)); break;
    case BSON_TYPE_DATE_TIME: put64(static_cast<uint64_t>(v.value.v_datetime)); break;
    case BSON_TYPE_TIMESTAMP: put64((uint64_t{v.value.v_timestamp.timestamp} << 32) | v.value.v_timestamp.increment); break;
    case BSON_TYPE_BOOL: out.push_back(v.value.v_bool ? 1 : 0); break;
    case BSON_TYPE_OID: put(v.value.v_oid.bytes, 12); break;
    case BSON_TYPE_DECIMAL128:
      put64(v.value.v_decimal128.low);
      put64(v.value.v_decimal128.high);
      break;
    case BSON_TYPE_NULL:
    case BSON_TYPE_UNDEFINED:
    case BSON_TYPE_MINKEY:
    case BSON_TYPE_MAXKEY: break;
    case BSON_TYPE_UTF8:
      if (!v.value.v_utf8.str) return encodeWithLibbson(v, out);
      put32(v.value.v_utf8.len + 1);
      put(v.value.v_utf8.str, v.value.v_utf8.len);
      out.push_back('\0');
      break;
    case BSON_TYPE_DOCUMENT:
      if (!bson_init_static(&doc, v.value.v_doc.data, v.value.v_doc.data_len)) return encodeWithLibbson(v, out);
      put(v.value.v_doc.data, v.value.v_doc.data_len);
      break;
    default: return encodeWithLibbson(v, out);
  }
  out.push_back('\0');
  uint32_t len = BSON_UINT32_TO_LE(static_cast<uint32_t>(out.size()));
  std::memcpy(out.data(), &len, 4);
}

bool keptWhole(const bson_value_t& v) {
  constexpr size_t kOverhead = 4 + 1 + 1 + 1;
  switch (v.value_type) {
    case BSON_TYPE_DOUBLE: case BSON_TYPE_INT32: case BSON_TYPE_INT64: case BSON_TYPE_DATE_TIME:
    case BSON_TYPE_TIMESTAMP: case BSON_TYPE_BOOL: case BSON_TYPE_OID: case BSON_TYPE_DECIMAL128:
    case BSON_TYPE_NULL: case BSON_TYPE_UNDEFINED: case BSON_TYPE_MINKEY: case BSON_TYPE_MAXKEY: return true;
    case BSON_TYPE_UTF8: return v.value.v_utf8.len + 5 + kOverhead <= kMaxKeptValueBytes;
    case BSON_TYPE_DOCUMENT: return v.value.v_doc.data_len + kOverhead <= kMaxKeptValueBytes;
    default: return false;
  }
}

bool encodeKeptValue(const bson_value_t& v, std::string& out) {
  constexpr size_t kOverhead = 4 + 1 + 1 + 1;  // length, type, empty key, terminator
  if (v.value_type == BSON_TYPE_UTF8 && v.value.v_utf8.str && v.value.v_utf8.len + 5 + kOverhead > kMaxKeptValueBytes) {
    bson_value_t prefix = v;
    prefix.value.v_utf8.len = static_cast<uint32_t>(kMaxKeptValueBytes - kOverhead - 5);  // string length + NUL
    encodeValue(prefix, out);
    return true;
  }
  switch (v.value_type) {  // small by construction
    case BSON_TYPE_DOUBLE: case BSON_TYPE_INT32: case BSON_TYPE_INT64: case BSON_TYPE_DATE_TIME:
    case BSON_TYPE_TIMESTAMP: case BSON_TYPE_BOOL: case BSON_TYPE_OID: case BSON_TYPE_DECIMAL128:
    case BSON_TYPE_NULL: case BSON_TYPE_UNDEFINED: case BSON_TYPE_MINKEY: case BSON_TYPE_MAXKEY: case BSON_TYPE_UTF8:
      encodeValue(v, out);
      return true;
    case BSON_TYPE_DOCUMENT:
      if (v.value.v_doc.data_len + kOverhead > kMaxKeptValueBytes) return false;
      encodeValue(v, out);
      return true;
    case BSON_TYPE_BINARY:
      if (v.value.v_binary.data_len + 5 + kOverhead > kMaxKeptValueBytes) return false;
      encodeValue(v, out);
      return out.size() <= kMaxKeptValueBytes;
    default:
      // Rare types (regex, code, symbol, ...): encoded through libbson, kept when small.
      encodeValue(v, out);
      if (out.size() <= kMaxKeptValueBytes) return true;
      out.clear();
      out.shrink_to_fit();
      return false;
  }
}

std::string encodeValue(const bson_value_t& v) {
  std::string out;
  encodeValue(v, out);
  return out;
}

namespace {

// decodeValue for what encodeValue writes for the common types ({"": value}), read directly:
// libbson's checks of the document and of its first element, without its ~240 instructions
// (the worker decodes every kept value: bounds, split points). False: leave it to libbson.
bool decodeCommon(std::string_view encoded, bson_value_t& out) {
  const auto* p = reinterpret_cast<const uint8_t*>(encoded.data());
  const size_t n = encoded.size();
  uint32_t len;
  if (n < 7 || n > INT32_MAX || p[5] != 0 || p[n - 1] != 0) return false;  // key "" only
  std::memcpy(&len, p, 4);
  if (BSON_UINT32_FROM_LE(len) != n) return false;
  const uint8_t* v = p + 6;
  const size_t room = n - 7;  // value bytes before the terminator (bson_iter_next: next_off < len)
  auto fixed = [&](size_t size) { return size <= room; };
  auto u32 = [&](const uint8_t* at) {
    uint32_t x;
    std::memcpy(&x, at, 4);
    return BSON_UINT32_FROM_LE(x);
  };
  auto u64 = [&](const uint8_t* at) {
    uint64_t x;
    std::memcpy(&x, at, 8);
    return BSON_UINT64_FROM_LE(x);
  };
  out = bson_value_t{};
  out.value_type = static_cast<bson_type_t>(p[4]);
  switch (p[4]) {
    case BSON_TYPE_DOUBLE: {
      if (!fixed(8)) return false;
      const uint64_t bits = u64(v);
      std::memcpy(&out.value.v_double, &bits, 8);
      return true;
    }
    case BSON_TYPE_UTF8: {  // bson_iter_next: length prefix, room for it, a NUL at its end
      if (room < 4) return false;
      const uint32_t l = u32(v);
      if (l == 0 || l > room - 4 || v[4 + l - 1] != 0) return false;
      out.value.v_utf8.str = const_cast<char*>(reinterpret_cast<const char*>(v + 4));
      out.value.v_utf8.len = l - 1;
      return true;
    }
    case BSON_TYPE_OID:
      if (!fixed(12)) return false;
      std::memcpy(out.value.v_oid.bytes, v, 12);
      return true;
    case BSON_TYPE_BOOL:
      if (!fixed(1) || v[0] > 1) return false;
      out.value.v_bool = v[0] != 0;
      return true;
    case BSON_TYPE_DATE_TIME:
      if (!fixed(8)) return false;
      out.value.v_datetime = static_cast<int64_t>(u64(v));
      return true;
    case BSON_TYPE_INT32:
      if (!fixed(4)) return false;
      out.value.v_int32 = static_cast<int32_t>(u32(v));
      return true;
    case BSON_TYPE_TIMESTAMP:
      if (!fixed(8)) return false;
      out.value.v_timestamp.increment = u32(v);
      out.value.v_timestamp.timestamp = u32(v + 4);
      return true;
    case BSON_TYPE_INT64:
      if (!fixed(8)) return false;
      out.value.v_int64 = static_cast<int64_t>(u64(v));
      return true;
    case BSON_TYPE_DECIMAL128:
      if (!fixed(16)) return false;
      out.value.v_decimal128.low = u64(v);
      out.value.v_decimal128.high = u64(v + 8);
      return true;
    case BSON_TYPE_NULL: case BSON_TYPE_UNDEFINED: case BSON_TYPE_MINKEY: case BSON_TYPE_MAXKEY:
      return true;
    default:
      return false;
  }
}

}  // namespace

bool decodeValue(std::string_view encoded, bson_value_t& out) {
  if (decodeCommon(encoded, out)) return true;
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

namespace {

uint64_t typeSeed(bson_type_t type) {
  return static_cast<uint64_t>(common::canonicalType(type) + 2) * 0x100000001B3ull;
}

// valueHash's hash of `n` bytes. A value of 1 KiB or more (never a useful shard-key value) is
// identified by its length and its sample (long_value_sample.h), hashed with XXH3: the evaluation's
// work per document is bounded by its field count, not its bytes (issue 29).
uint64_t hashValueBytes(const void* p, size_t n, uint64_t seed) {
  if (n < kLongValueBytes) return common::hashBytes(std::string_view(static_cast<const char*>(p), n), seed);
  LongValueSample sample;
  sample.start(n);
  sample.take(p, 0, n);
  return sample.hash(seed);
}

}  // namespace

uint64_t valueHash(const bson_value_t& v) {
  const uint64_t seed = typeSeed(v.value_type);
  auto bytes = [&](const void* p, size_t n) { return hashValueBytes(p, n, seed); };
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
    // Documents, arrays and binaries hash the bytes where they lie: a 16 MB field is never copied.
    case BSON_TYPE_DOCUMENT:
    case BSON_TYPE_ARRAY:
      return combineHash(bytes(&v.value_type, sizeof v.value_type), bytes(v.value.v_doc.data, v.value.v_doc.data_len));
    case BSON_TYPE_BINARY:
      return combineHash(bytes(&v.value.v_binary.subtype, sizeof v.value.v_binary.subtype),
                         bytes(v.value.v_binary.data, v.value.v_binary.data_len));
    default: {
      thread_local std::string encoded;  // reused: hashing a rare type allocates nothing once warm
      encodeValue(v, encoded);
      if (encoded.capacity() > 4096) {
        uint64_t h = bytes(encoded.data(), encoded.size());
        std::string().swap(encoded);
        return h;
      }
      return bytes(encoded.data(), encoded.size());
    }
  }
}

void ValueHashStream::begin(bson_type_t type, size_t n, bson_subtype_t subtype) {
  type_ = type, subtype_ = subtype, seed_ = typeSeed(type);
  n_ = n, fed_ = 0, held_len_ = 0;
  if (n_ >= kHeld) long_.start(n_);
}

void ValueHashStream::feed(const void* bytes, size_t len) {
  len = std::min(len, n_ - fed_);
  if (n_ >= kHeld) {
    long_.take(bytes, fed_, len);
    fed_ += len;
    return;
  }
  fed_ += len;
  std::memcpy(held_ + held_len_, bytes, len);  // a short value is held whole, hashed at the end as valueHash hashes it
  held_len_ += len;
}

uint64_t ValueHashStream::finish() const {
  const uint64_t h = n_ < kHeld ? common::hashBytes(std::string_view(held_, held_len_), seed_) : long_.hash(seed_);
  switch (type_) {  // as valueHash combines them
    case BSON_TYPE_DOCUMENT:
    case BSON_TYPE_ARRAY: return combineHash(hashValueBytes(&type_, sizeof type_, seed_), h);
    case BSON_TYPE_BINARY: return combineHash(hashValueBytes(&subtype_, sizeof subtype_, seed_), h);
    default: return h;
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
