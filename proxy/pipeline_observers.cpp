#include "proxy/pipeline_observers.h"

namespace shardscope::proxy {

void MirrorObserver::onRequest(const pipeline::Operation& op) {
  if (op.handshake || op.injectedFault()) return;
  mirror_.onRequest(id_, op.requestId(), op.view, op.ns, op.target.targeting, &op.shape_cache);
}

void MirrorObserver::onReply(const pipeline::PendingOp& op, const pipeline::Reply& reply) {
  if (reply.kind != pipeline::Reply::Kind::Answer || op.injected_fault) return;
  mirror_.onPrimaryReply(id_, op.clientRequestId(), reply.body, reply.latency_ns);
}

void CaptureObserver::onRequest(const pipeline::Operation& op) {
  if (op.handshake || op.injectedFault()) return;
  capture_.onRequest(id_, op.requestId(), op.view, op.ns, op.message, &op.shape_cache);
}

void CaptureObserver::onReply(const pipeline::PendingOp& op, const pipeline::Reply& reply) {
  if (reply.kind != pipeline::Reply::Kind::Answer || op.injected_fault) return;
  capture_.onReply(id_, op.clientRequestId(), reply.message, reply.latency_ns);
}

}  // namespace shardscope::proxy
