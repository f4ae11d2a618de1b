// What a commitTransaction's reply says of the transaction. ok: committed (a writeConcernError
// does not undo the commit on the primary). An error that leaves the outcome unknown: the drivers'
// transactions specification labels such an error UnknownTransactionCommitResult and lets the
// commit be sent again (a retryable error, MaxTimeMSExpired, a write concern failure, or the label
// itself in the reply); any other error (NoSuchTransaction, ...) aborted it.
#pragma once
#include <cstdint>

#include "protocol/reply_facts.h"

namespace shardscope::protocol {

// The error codes after which a driver retries a write (the retryable-writes specification).
inline constexpr int32_t kRetryableWriteCodes[] = {6, 7, 89, 91, 189, 262, 9001, 10107, 11600, 11602, 13435, 13436};
bool isRetryableWriteCode(int32_t code);

enum class CommitOutcome { Committed, Aborted, Unknown };
// `reply.parsed` false (no answer came) is Unknown.
CommitOutcome commitOutcomeOf(const ReplyFacts& reply);

}  // namespace shardscope::protocol
