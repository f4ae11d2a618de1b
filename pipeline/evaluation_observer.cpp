#include "pipeline/evaluation_observer.h"

namespace shardscope::pipeline {

void EvaluationObserver::onRequest(const Operation& op) {
  if (op.injectedFault() || op.ns.empty()) return;  // a bulkWrite names no collection: op.ns is its first op's
  // What its reply settles travels with the request, in this observer's slot.
  slotOf(op.pending).set(observer_.observe(op.view, op.ns, &op.shape_cache));
}

void EvaluationObserver::onReply(const PendingOp& op, const Reply& reply) {
  // A superseded reply settles nothing: the re-run's reply (same slot) does.
  if (reply.kind == Reply::Kind::Superseded || op.injected_fault) return;
  // Confirms upserts (the document exists only if the reply says so); NoReply just releases.
  observer_.onReply(slotOf(op).get<evaluation::ReplyTicket>(), *reply.facts);
}

}  // namespace shardscope::pipeline
