// libFuzzer: query shapes (common/query_shape.h) of arbitrary commands that pass the proxy's request
// validation. Input: OP_MSG sections (kind-0 body, optional kind-1 sequences). Invariants checked:
// no crash or hang, the shape of a filter is valid JSON, and equal inputs give equal shapes.
#include <bson/bson.h>

#include <cstddef>
#include <cctype>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>
#include <string_view>

#include "fuzz/fuzz_support.h"
#include "common/query_shape.h"

using namespace shardscope;

// A strict RFC 8259 syntax check (libbson's parser would read "$regex" keys as Extended JSON).
struct JsonChecker {
  std::string_view s;
  size_t i = 0;
  int depth = 0;
  void ws() { while (i < s.size() && (s[i] == ' ' || s[i] == '\n' || s[i] == '\t' || s[i] == '\r')) ++i; }
  bool lit(std::string_view w) { return s.substr(i, w.size()) == w ? (i += w.size(), true) : false; }
  bool str() {
    if (i >= s.size() || s[i] != '"') return false;
    for (++i; i < s.size(); ++i) {
      auto c = static_cast<unsigned char>(s[i]);
      if (c == '"') return ++i, true;
      if (c < 0x20) return false;
      if (c == '\\') {
        if (++i >= s.size()) return false;
        if (s[i] == 'u') {
          for (int k = 0; k < 4; ++k)
            if (++i >= s.size() || !std::isxdigit(static_cast<unsigned char>(s[i]))) return false;
        } else if (!std::strchr("\"\\/bfnrt", s[i])) {
          return false;
        }
      }
    }
    return false;
  }
  bool num() {
    size_t start = i;
    if (i < s.size() && s[i] == '-') ++i;
    while (i < s.size() && (std::isdigit(static_cast<unsigned char>(s[i])) || std::strchr(".eE+-", s[i]))) ++i;
    return i > start;
  }
  bool value() {
    if (++depth > 512) return false;
    ws();
    bool ok;
    if (i >= s.size()) ok = false;
    else if (s[i] == '{') ok = container('}', true);
    else if (s[i] == '[') ok = container(']', false);
    else if (s[i] == '"') ok = str();
    else ok = lit("true") || lit("false") || lit("null") || num();
    --depth;
    ws();
    return ok;
  }
  bool container(char close, bool object) {
    ++i;
    ws();
    if (i < s.size() && s[i] == close) return ++i, true;
    for (;;) {
      if (object) {
        ws();
        if (!str()) return false;
        ws();
        if (i >= s.size() || s[i++] != ':') return false;
      }
      if (!value()) return false;
      if (i < s.size() && s[i] == ',') { ++i; continue; }
      return i < s.size() && s[i++] == close;
    }
  }
};

static void checkJson(const std::string& json) {
  JsonChecker c{json};
  // appendFilterShape promises valid JSON in valid UTF-8 (the admin endpoint embeds it).
  if (!c.value() || c.i != json.size() || !bson_utf8_validate(json.data(), json.size(), false)) {
    fprintf(stderr, "shape is not valid JSON:\n%s\n", json.c_str());
    __builtin_trap();
  }
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::vector<uint8_t> frame;
  protocol::OpMsg msg;
  protocol::CommandView view;
  if (!fuzz::decodeSections({data, size}, frame, msg, view)) return 0;

  std::string shape, again;
  common::computeShape(view, shape);
  common::computeShape(view, again);
  if (shape != again) __builtin_trap();  // shape ids must be deterministic
  // Bounded whatever the input (4 KB limit, plus at most one cut entry per nesting level).
  if (shape.size() > 64 * 1024) __builtin_trap();
  common::hashBytes(shape);

  std::string filter;
  common::appendFilterShape(view.body, filter);
  checkJson(filter);
  if (filter.size() > 64 * 1024) __builtin_trap();

  bson_iter_t it;
  if (bson_iter_init_find(&it, &view.body, "pipeline") && BSON_ITER_HOLDS_ARRAY(&it)) {
    uint32_t len;
    const uint8_t* buf;
    bson_iter_array(&it, &len, &buf);
    bson_t pipeline;
    if (bson_init_static(&pipeline, buf, len)) {
      std::string p;
      common::appendPipelineShape(pipeline, p);
    }
  }
  return 0;
}
