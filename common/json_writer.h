// A minimal streaming JSON writer (objects, arrays, escaped strings, numbers): enough for /stats
// without a JSON library; invalid UTF-8 is replaced so the output always parses.
#pragma once
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace shardscope::common {

class JsonWriter {
 public:
  explicit JsonWriter(std::string& out) : out_(out) {}

  JsonWriter& beginObject() { return open('{'); }
  JsonWriter& endObject() { return close('}'); }
  JsonWriter& beginArray() { return open('['); }
  JsonWriter& endArray() { return close(']'); }
  JsonWriter& key(std::string_view k) {
    separate();
    appendString(k, out_);
    out_.push_back(':');
    after_key_ = true;
    return *this;
  }
  JsonWriter& value(std::string_view s) {
    separate();
    appendString(s, out_);
    return *this;
  }
  JsonWriter& value(const char* s) { return value(std::string_view(s)); }
  JsonWriter& value(bool b) { return raw(b ? "true" : "false"); }
  JsonWriter& value(uint64_t v) { return raw(std::to_string(v)); }
  JsonWriter& value(int64_t v) { return raw(std::to_string(v)); }
  JsonWriter& value(uint32_t v) { return value(static_cast<uint64_t>(v)); }
  JsonWriter& value(int32_t v) { return value(static_cast<int64_t>(v)); }
  JsonWriter& value(double v);
  JsonWriter& null() { return raw("null"); }
  // Already-valid JSON text (e.g. a query shape).
  JsonWriter& raw(std::string_view json) {
    separate();
    out_.append(json);
    return *this;
  }
  template <typename T>
  JsonWriter& field(std::string_view k, T v) {
    key(k);
    return value(v);
  }

  // How appendString writes bytes that are not UTF-8: replaced by U+FFFD (every page and API that
  // shows a client's bytes), or kept as they came (JSON text handed straight to a parser that judges
  // them: the shell-syntax reader, the routing file's YAML conversion).
  enum class InvalidUtf8 { Replace, Keep };
  // `s` as a quoted JSON string: '"' and '\\' escaped, control characters as \u00XX.
  static void appendString(std::string_view s, std::string& out, InvalidUtf8 invalid = InvalidUtf8::Replace);

 private:
  JsonWriter& open(char c) {
    separate();
    out_.push_back(c);
    first_.push_back(true);
    return *this;
  }
  JsonWriter& close(char c) {
    out_.push_back(c);
    first_.pop_back();
    return *this;
  }
  void separate() {
    if (after_key_) {
      after_key_ = false;
      return;
    }
    if (!first_.empty()) {
      if (!first_.back()) out_.push_back(',');
      first_.back() = false;
    }
  }

  std::string& out_;
  std::vector<bool> first_;
  bool after_key_ = false;
};

// Unix ms -> "2024-05-01T12:00:00.123Z"; 0 -> "".
std::string isoTime(int64_t unixMs);

}  // namespace shardscope::common
