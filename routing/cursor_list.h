// killCursors' list of cursor ids, read once per request and charged to the per-request analysis
// budget (TargetOptions::analysis_budget): the request pipeline reads it into its Operation, and
// targeting, the cursor registry's bookkeeping and the mirror use that list instead of walking
// the body again. A list longer than the budget allows is read no further: the request is
// forwarded unchanged, targeted Unclassified (over budget, with a reason), and its cursors are
// not looked up or forgotten one by one (the registry's own bounds evict them).
#pragma once
#include <bson/bson.h>

#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>
#include <vector>

namespace shardscope::routing {

// What one listed id costs: reading it, looking up its shards, forgetting it (two registry
// operations, each a lock and a hash probe, ~2-3 filter elements' work each). With the default
// budget of 50,000 units a request may list 10,000 ids, the bound targeting always had.
constexpr size_t kUnitsPerCursorId = 5;

constexpr std::string_view kCursorsOverBudget =
    "too many cursor ids to analyse (over the per-request budget): forwarded without cursor bookkeeping";

struct CursorList {
  std::span<const int64_t> ids;  // the listed ids (numbers), in order; empty when over budget
  size_t walked = 0;             // array elements read (at most the budget's worth plus one)
  size_t spent = 0;              // budget units charged
  bool over_budget = false;      // the list is longer than the budget allows: not analysed
};

// Reads `body`'s "cursors" array into `scratch` (cleared; reused, so no allocation once warm),
// stopping as soon as the budget is spent.
CursorList readCursorList(const bson_t& body, size_t budget, std::vector<int64_t>& scratch);

}  // namespace shardscope::routing
