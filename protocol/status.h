// Result of a parse step: parsers never throw; they return a status and, when it failed, why.
#pragma once
#include <string_view>

namespace shardscope::protocol {

enum class ParseStatus { Ok, NeedMore, TooLarge, Malformed };

struct ParseResult {
  ParseStatus status = ParseStatus::Ok;
  std::string_view error;  // static text; empty when Ok

  bool ok() const { return status == ParseStatus::Ok; }
  static ParseResult success() { return {}; }
  static ParseResult malformed(std::string_view why) { return {ParseStatus::Malformed, why}; }
};

}  // namespace shardscope::protocol
