#include "evaluation/retried_writes.h"

#include <bson/bson.h>

#include <string_view>

#include "evaluation/raw_fields.h"

namespace shardscope::evaluation {

namespace {

// FNV-1a over the lsid's bytes ({id: UUID, uid} as sent), then its txnNumber's (unless
// `lsid_only`); 0 without them.
uint64_t sessionNumberKey(const protocol::CommandView& view, bool lsid_only = false) {
  if (!view.hasTxnNumber || !view.hasLsid) return 0;
  std::array<RawElement, 2> found;
  findFields(view.body, std::array<std::string_view, 2>{"lsid", "txnNumber"}, found);
  const RawElement &lsid = found[0], &txn = found[1];
  if (lsid.type != BSON_TYPE_DOCUMENT || !txn.found()) return 0;
  const uint8_t* data = bson_get_data(&view.body);
  uint64_t h = 14695981039346656037ull;
  for (uint32_t i = lsid.value; i < lsid.end; ++i) h = (h ^ data[i]) * 1099511628211ull;
  if (!lsid_only)
    for (uint32_t i = txn.value; i < txn.end; ++i) h = (h ^ data[i]) * 1099511628211ull;
  h ^= h >> 31;
  return h ? h : 1;
}

}  // namespace

uint64_t RetriedWrites::keyOf(const protocol::CommandView& view) {
  return view.inTransaction ? 0 : sessionNumberKey(view);
}

uint64_t RetriedWrites::transactionKeyOf(const protocol::CommandView& view) {
  return view.inTransaction ? sessionNumberKey(view) : 0;
}

uint64_t RetriedWrites::transactionSessionOf(const protocol::CommandView& view) {
  return view.inTransaction ? sessionNumberKey(view, true) : 0;
}

}  // namespace shardscope::evaluation
