#include "pipeline/evaluation_observer.h"

namespace shardscope::pipeline {

void EvaluationObserver::onRequest(const Operation& op) {
  if (op.injectedFault() || op.view.collection.empty()) return;
  observer_.observe(op.view, op.ns, &op.shape_cache);
}

void EvaluationObserver::onReply(const PendingOp& op, const Reply& reply) {
  if (reply.kind != Reply::Kind::Answer || op.injected_fault) return;
  observer_.onReply({}, reply.body);  // confirms upserts: the document exists only if the reply says so
}

}  // namespace shardscope::pipeline
