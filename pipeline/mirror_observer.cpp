#include "pipeline/mirror_observer.h"

namespace shardscope::pipeline {

void MirrorObserver::onRequest(const Operation& op) {
  if (op.handshake || op.injectedFault()) return;
  // What the reply needs back travels with the request, in this observer's slot.
  slotOf(op.pending).set(
      mirror_.onRequest(id_, op.requestId(), op.view, op.ns, op.target.targeting, &op.shape_cache, op.killed_cursors));
}

void MirrorObserver::onReply(const PendingOp& op, const Reply& reply) {
  if (reply.kind != Reply::Kind::Answer || op.injected_fault) return;
  mirror_.onPrimaryReply(id_, op.clientRequestId(), slotOf(op).get<shadow::MirrorTicket>(), *reply.facts,
                         reply.latency_ns);
}

}  // namespace shardscope::pipeline
