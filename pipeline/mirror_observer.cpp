#include "pipeline/mirror_observer.h"

namespace shardscope::pipeline {

void MirrorObserver::onRequest(const Operation& op) {
  if (op.handshake || op.injectedFault()) return;
  mirror_.onRequest(id_, op.requestId(), op.view, op.ns, op.target.targeting, &op.shape_cache, op.killed_cursors);
}

void MirrorObserver::onReply(const PendingOp& op, const Reply& reply) {
  if (reply.kind != Reply::Kind::Answer || op.injected_fault) return;
  mirror_.onPrimaryReply(id_, op.clientRequestId(), reply.body, reply.latency_ns);
}

}  // namespace shardscope::pipeline
