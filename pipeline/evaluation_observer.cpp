#include "pipeline/evaluation_observer.h"

namespace shardscope::pipeline {

void EvaluationObserver::onRequest(const Operation& op) {
  if (op.injectedFault() || op.view.collection.empty()) return;
  observer_.observe(op.view, op.ns);
}

void EvaluationObserver::onReply(const PendingOp& op, const Reply& reply) {
  if (reply.kind != Reply::Kind::Answer || op.injected_fault) return;
  // Reply-side evaluation goes here (evaluation::Observer::onReply(ns, reply.body) once it exists).
}

}  // namespace shardscope::pipeline
