// The query operators mongos's parser knows. A filter naming any other ({b: {$invalid: 1}},
// {$foo: 1}) fails to parse there (BadValue "unknown operator"), so it is targeted nowhere.
#pragma once
#include <bson/bson.h>

#include <string_view>

namespace shardscope::routing {

// "unknown query operator: mongos fails to parse the filter (BadValue), nothing is targeted"
extern const std::string_view kUnknownOperator;

// Operators of a field ({f: {$gt: 1}}) and of the filter's top level ({$or: [...]}); internal
// operators ($_internal...) are accepted.
bool isKnownFieldOperator(std::string_view op);
bool isKnownTopLevelOperator(std::string_view op);

// True when `value` is an operator object ({$gt: 1, $foo: 2}) naming an operator mongos does not
// know. A DBRef ({$ref, $id, $db}) is a literal, not an operator object. `visited` counts the
// operators read (for the caller's work budget).
bool hasUnknownFieldOperator(const bson_iter_t& value, size_t& visited);

// The whole filter: top-level operators, $and/$or/$nor branches, each field's operators and a
// $not's. Stops (answering false) once `budget` elements were read; `visited` says how many.
bool hasUnknownOperator(const bson_t& filter, size_t budget, size_t& visited);

}  // namespace shardscope::routing
