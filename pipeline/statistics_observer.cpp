#include "pipeline/statistics_observer.h"

namespace shardscope::pipeline {

void StatisticsObserver::onRequest(const Operation& op) {
  // A retryable write the rewrite holds sent its confirming read first (one shard, as the rewritten
  // write targets): that read is what the request's target counts now; the write follows.
  const bool confirming = op.pending.rewrite && op.pending.rewrite->plan.confirm;
  op.pending.stats = recorder_.onRequest(op.view, op.ns, op.shape(), op.target, op.messageBytes(),
                                         confirming ? stats::FirstSent::ConfirmingRead : stats::FirstSent::Command,
                                         op.routing_load);
  if (op.pending.rewrite) recorder_.onRewrite(op.pending.stats, op.pending.rewrite->before, confirming);
}

void StatisticsObserver::onReply(const PendingOp& op, const Reply& reply) {
  // A superseded reply is not counted: the next message's reply is, under the same handle.
  if (reply.kind == Reply::Kind::Superseded) recorder_.onAlsoSent(op.stats, *reply.rerun, reply.fallback);
  else recorder_.onReply(op.stats, *reply.facts, reply.wire_bytes, reply.latency_ns);
}

}  // namespace shardscope::pipeline
