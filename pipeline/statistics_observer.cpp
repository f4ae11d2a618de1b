#include "pipeline/statistics_observer.h"

namespace shardscope::pipeline {

void StatisticsObserver::onRequest(const Operation& op) {
  op.pending.stats =
      recorder_.onRequest(op.view, op.ns, op.shape(), op.target, op.messageBytes());
  if (op.pending.rewrite) recorder_.onRewrite(op.pending.stats, op.pending.rewrite->before);
}

void StatisticsObserver::onReply(const PendingOp& op, const Reply& reply) {
  // A superseded reply is not counted: the re-run's reply is, under the same handle.
  if (reply.kind == Reply::Kind::Superseded) recorder_.onRewriteFallback(op.stats, *reply.rerun);
  else recorder_.onReply(op.stats, *reply.facts, reply.wire_bytes, reply.latency_ns);
}

}  // namespace shardscope::pipeline
