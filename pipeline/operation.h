// One client request as the pipeline sees it: every fact derived once (command, namespace, kind,
// query shape, targeting, rewrite), on the stack and made of views over the message, so the hot
// path allocates nothing. Observers read it; what must outlive the request (for its reply) lives
// in `pending`, which the reply side gets back.
#pragma once
#include <bson/bson.h>

#include <cstdint>
#include <span>
#include <string>
#include <string_view>

#include "pipeline/pending_ops.h"
#include "protocol/command_kind.h"
#include "protocol/command_view.h"
#include "protocol/reply_facts.h"
#include "routing/cursor_list.h"
#include "routing/target_result.h"
#include "common/query_shape.h"

namespace shardscope::pipeline {

// The query shape and its id, computed on first use and then shared by every observer.
using common::ShapeCache;

struct Operation {
  const protocol::CommandView& view;    // as the client wrote it (statistics, evaluation, mirror)
  const protocol::CommandView& routed;  // as it goes upstream: differs when a lookup rule rewrote it
  std::string_view ns;                  // "db.collection"; empty when the command names none
  const protocol::CommandTraits& traits;  // view.traits: classified once, with the view (protocol/command_kind.h)
  const routing::TargetResult& target;  // targeting of `routed`
  std::span<const uint8_t> message;     // the client's message, uncompressed
  bool handshake = false;               // a hello that negotiates compression (not mirrored or captured)
  PendingOp& pending;  // the persistent part; an observer may leave its handle here (statistics)
  ShapeCache& shape_cache;
  // killCursors: its ids, read once (charged to the analysis budget); null for other commands.
  const routing::CursorList* killed_cursors = nullptr;
  // A streamed insert (issue 29): its whole size; `message` is then its head (no documents).
  uint32_t streamed_bytes = 0;
  // The load number of the routing table whose positions `target.shards` (and a rewrite's other
  // targets) are (routing::RoutingLoad::generation; 0: none loaded): the table the request was
  // targeted with, or for a cursor's getMore / killCursors the one its opening query was.
  // Statistics file the shards under that load's names.
  uint64_t routing_load = 0;

  uint32_t messageBytes() const { return streamed_bytes ? streamed_bytes : static_cast<uint32_t>(message.size()); }

  int32_t requestId() const { return pending.request_id; }
  int64_t cursorId() const { return view.cursorId.value_or(0); }
  bool injectedFault() const { return pending.injected_fault; }
  // The shape and its one id (common/query_shape.h): the same in /stats, /evaluate, /mirror,
  // capture records and /metrics.
  common::Shape shape() const { return shape_cache.get(view, ns); }
};

// The facts of no reply (NoReply, Superseded, or a reply without a readable document).
inline const protocol::ReplyFacts kNoReplyFacts{};

// What came back for an operation. Its document is read once, by the pipeline, into `facts`
// (protocol/reply_facts.h): observers read the facts, never the body.
struct Reply {
  enum class Kind : uint8_t {
    Answer,      // upstream's reply (or the sidecar's own, for an injected fault)
    NoReply,     // fire-and-forget (moreToCome): nothing will come
    Superseded,  // what went first was a step the client never sees (a rewritten attempt, a
                 // retryable write's confirming read): another message goes for it (`rerun`)
  };
  Kind kind = Kind::Answer;
  std::span<const uint8_t> message;  // uncompressed (the capture writes it as it is)
  const protocol::ReplyFacts* facts = &kNoReplyFacts;  // never null; parsed=false: no readable document
  uint32_t wire_bytes = 0;           // as received
  uint64_t latency_ns = 0;
  // Superseded: how the message that goes next is targeted: the original after a fallback
  // (`fallback`), or the rewritten write a confirming read proved right.
  const routing::TargetResult* rerun = nullptr;
  bool fallback = true;
};

}  // namespace shardscope::pipeline
