#include "protocol/transaction_outcome.h"

#include <algorithm>
#include <iterator>
#include <string_view>

namespace shardscope::protocol {

namespace {

constexpr int32_t kMaxTimeMSExpired = 50, kWriteConcernFailed = 64;

bool labelled(const ReplyFacts& reply, std::string_view label) {
  const ElementView* labels = reply.other("errorLabels");
  bson_iter_t it;
  if (!labels || !labels->children(it)) return false;
  while (bson_iter_next(&it)) {
    uint32_t len = 0;
    if (BSON_ITER_HOLDS_UTF8(&it) && std::string_view(bson_iter_utf8(&it, &len), len) == label) return true;
  }
  return false;
}

}  // namespace

bool isRetryableWriteCode(int32_t code) {
  return std::find(std::begin(kRetryableWriteCodes), std::end(kRetryableWriteCodes), code) !=
         std::end(kRetryableWriteCodes);
}

CommitOutcome commitOutcomeOf(const ReplyFacts& reply) {
  if (!reply.parsed) return CommitOutcome::Unknown;
  if (!reply.has_ok || reply.ok) return CommitOutcome::Committed;
  if (isRetryableWriteCode(reply.code) || reply.code == kMaxTimeMSExpired || reply.code == kWriteConcernFailed ||
      labelled(reply, "UnknownTransactionCommitResult") || labelled(reply, "RetryableWriteError"))
    return CommitOutcome::Unknown;
  return CommitOutcome::Aborted;
}

}  // namespace shardscope::protocol
