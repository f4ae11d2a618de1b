// Does a reply from mongos say its routing information was stale? mongos retries StaleConfig
// itself outside transactions, so a client sees one only when the retries ran out, inside a
// transaction, or per statement in a write's writeErrors. Any of them means the chunk layout moved
// under us: the proxy refreshes that namespace at once instead of waiting for the interval.
#pragma once
#include <bson/bson.h>

#include <cstdint>
#include <string>

#include "protocol/reply_facts.h"

namespace shardscope::routing {

// StaleConfig 13388, StaleEpoch 150, StaleShardVersion 63, StaleDbVersion 249.
bool isStaleRoutingCode(int64_t code);

// True when the reply carries a stale-routing error: as its top-level `code`, in
// `writeErrors[].code`, in `writeConcernError.code`, or as an `errorLabels` entry naming one
// (`StaleConfig`). Read from the reply's facts (one linear pass, protocol/reply_facts.h); at most
// kMaxWriteErrorsInspected write errors are looked into for a stale code.
bool replyShowsStaleRouting(const bson_t* reply);

// The same, and when true the namespace the error names (its `ns`, or `errInfo.ns` of a write
// error; `db` for StaleDbVersion), empty when it names none (refresh everything then).
bool replyShowsStaleRouting(const bson_t* reply, std::string& ns);
// From the reply's facts (protocol/reply_facts.h), as the pipeline read them once.
bool replyShowsStaleRouting(const protocol::ReplyFacts& reply, std::string& ns);

inline constexpr int kMaxTopLevelFields = 64;
inline constexpr int kMaxWriteErrorsInspected = 64;
inline constexpr int kMaxErrorLabelsInspected = 16;

}  // namespace shardscope::routing
