// For tests only (tests/protocol/command_kind_test.cpp): the table's names, and the table read the
// way classifyCommand read it before it grouped names by length, a scan of every entry. The test
// checks that the two give the same traits for every name in the table and for random names.
#pragma once
#include <string_view>
#include <vector>

#include "protocol/command_kind.h"

namespace shardscope::protocol {

std::vector<std::string_view> commandTableNames();
CommandTraits classifyCommandByScan(std::string_view name);

}  // namespace shardscope::protocol
