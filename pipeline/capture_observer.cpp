#include "pipeline/capture_observer.h"

namespace shardscope::pipeline {

namespace {
// Kept in this observer's slot: whether the request went to the capture, so its reply does too.
// The reply of a request left out (the handshake, an injected fault, credentials: a saslStart's
// reply holds the server's salt and nonce, a saslContinue's its signature) is left out with it.
struct CaptureTicket {
  bool captured = false;
};
}  // namespace

void CaptureObserver::onRequest(const Operation& op) {
  if (op.handshake || op.injectedFault() || op.view.traits.carries_secrets) return;
  slotOf(op.pending).set(CaptureTicket{true});
  capture_.onRequest(id_, op.requestId(), op.view, op.ns, op.message, &op.shape_cache);
}

void CaptureObserver::onReply(const PendingOp& op, const Reply& reply) {
  if (reply.kind != Reply::Kind::Answer || op.injected_fault || !slotOf(op).get<CaptureTicket>().captured) return;
  capture_.onReply(id_, op.clientRequestId(), reply.message, *reply.facts, reply.latency_ns);
}

}  // namespace shardscope::pipeline
