#include "routing/cursor_list.h"

namespace shardscope::routing {

CursorList readCursorList(const bson_t& body, size_t budget, std::vector<int64_t>& scratch) {
  CursorList out;
  scratch.clear();
  bson_iter_t it, ids;
  if (!bson_iter_init_find(&it, &body, "cursors") || !BSON_ITER_HOLDS_ARRAY(&it) || !bson_iter_recurse(&it, &ids))
    return out;
  while (bson_iter_next(&ids)) {
    ++out.walked;
    if (out.spent + kUnitsPerCursorId > budget) {  // one more id than the budget allows: stop here
      out.over_budget = true;
      scratch.clear();
      break;
    }
    out.spent += kUnitsPerCursorId;
    if (BSON_ITER_HOLDS_NUMBER(&ids)) scratch.push_back(bson_iter_as_int64(&ids));
  }
  out.ids = scratch;
  return out;
}

}  // namespace shardscope::routing
