#include "pipeline/capture_observer.h"

namespace shardscope::pipeline {

void CaptureObserver::onRequest(const Operation& op) {
  if (op.handshake || op.injectedFault()) return;
  capture_.onRequest(id_, op.requestId(), op.view, op.ns, op.message, &op.shape_cache);
}

void CaptureObserver::onReply(const PendingOp& op, const Reply& reply) {
  if (reply.kind != Reply::Kind::Answer || op.injected_fault) return;
  capture_.onReply(id_, op.clientRequestId(), reply.message, *reply.facts, reply.latency_ns);
}

}  // namespace shardscope::pipeline
