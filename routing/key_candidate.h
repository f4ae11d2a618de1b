// A shard-key candidate as a person writes it, one syntax for every input that takes one (the
// proxy's evaluation.candidates, `replay --candidate`): "db.coll: {customerId: 1, orderDate: 1}".
#pragma once
#include <string>
#include <string_view>

namespace shardscope::routing {

struct KeyCandidate {
  std::string ns;        // "shop.orders"
  std::string key_json;  // the pattern as ShardKeyPattern::toJson writes it: {"customerId": 1}
};

// "db.coll: KEY", KEY in JSON or mongosh syntax ({customerId: 1}, {orderId: 'hashed'}). On failure
// `error` quotes the spec and says what is wrong.
bool parseKeyCandidate(std::string_view spec, KeyCandidate& out, std::string& error);

// The syntax, for error messages and help texts.
inline constexpr std::string_view kKeyCandidateSyntax = "'db.coll: {field: 1, ...}'";

}  // namespace shardscope::routing
