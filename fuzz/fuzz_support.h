// Shared by the command-level fuzzers: wraps fuzzer bytes (OP_MSG sections: a kind-0 body and
// optional kind-1 document sequences) into a whole OP_MSG and decodes it as the proxy does, so the
// code under test only ever sees commands that passed the real request-path validation.
#pragma once
#include <cctype>
#include <cstdint>
#include <cstring>
#include <span>
#include <string_view>
#include <vector>

#include "protocol/command_view.h"
#include "protocol/op_msg.h"
#include "protocol/wire.h"

namespace shardscope::fuzz {

// `sections` is everything after the OP_MSG flag word. Returns false when the proxy would refuse
// the message (so the command never reaches routing, stats or rewrites).
inline bool decodeSections(std::span<const uint8_t> sections, std::vector<uint8_t>& frame, protocol::OpMsg& msg,
                           protocol::CommandView& view) {
  frame.assign(20, 0);
  frame.insert(frame.end(), sections.begin(), sections.end());
  protocol::MsgHeader header;
  header.messageLength = static_cast<int32_t>(frame.size());
  header.requestId = 1;
  header.opCode = static_cast<int32_t>(protocol::OpCode::Msg);
  protocol::writeHeader(frame.data(), header);
  return protocol::decodeOpMsg(frame, msg).ok() && protocol::buildCommandView(msg, view).ok();
}

// A strict RFC 8259 syntax check (libbson's parser would read "$regex" keys as Extended JSON).
// Bytes are not checked for UTF-8 here.
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

inline bool isJson(std::string_view text) {
  JsonChecker c{text};
  return c.value() && c.i == text.size();
}

}  // namespace shardscope::fuzz
