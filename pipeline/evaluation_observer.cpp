#include "pipeline/evaluation_observer.h"

namespace shardscope::pipeline {

void EvaluationObserver::onRequest(const Operation& op) {
  // A bulkWrite names no collection: op.ns is its first op's. commitTransaction and abortTransaction
  // name none either: they settle the transaction's inserts.
  const auto kind = op.view.traits.kind;
  // listCollections names none: its reply lists the database's collections.
  const bool names_none = kind == protocol::CommandKind::CommitTransaction ||
                          kind == protocol::CommandKind::AbortTransaction ||
                          op.view.traits.collation_source == protocol::DefaultCollationSource::ListCollections;
  if (op.injectedFault() || (op.ns.empty() && !names_none)) return;
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
