// The lookup rewrite as a step of the pipeline (rules: routing/lookup_*): a command that names a
// rule's lookup field gains the shard-key field its mapping knows, is targeted once as it will run,
// and its reply is verified before the client sees it; when the reply cannot prove the rewrite
// right, the client's original runs instead (after closing the rewritten cursor), and the
// original's reply tells whether the mapping was wrong.
#include <spdlog/spdlog.h>

#include <algorithm>
#include <vector>

#include "pipeline/pipeline.h"
#include "rewrite/lookup_learning.h"
#include "rewrite/lookup_rewrite.h"
#include "rewrite/unplanned_writes.h"
#include "routing/targeting.h"

namespace shardscope::pipeline {

namespace {

std::span<const uint8_t> bytesOf(const bson_t& b) { return {bson_get_data(&b), b.len}; }

// What a rewrite's state will copy: the client's message, the plan's parts, and for a retryable
// write the rewritten message too (about the message's size again).
size_t rewriteCopyBytes(size_t messageBytes, const rewrite::RewritePlan& plan) {
  size_t keys = 0;
  for (const auto& k : plan.in_keys) keys += k.size();
  const size_t planBytes = plan.body.size() + plan.sequence_docs.size() + plan.lookup_values.size() +
                           plan.confirm_filter.size() + keys;
  return messageBytes + planBytes + (plan.confirm ? messageBytes + plan.body.size() : 0);
}

}  // namespace

std::span<const uint8_t> Pipeline::applyLookupRule(PendingOp& op, std::span<const uint8_t> message, std::string_view ns,
                                                   const RoutingInForce& tableInForce) {
  rewrite::LookupIndex& index = *op.lookup;
  const routing::RoutingTable* table = tableInForce.table;
  const auto* collection = table ? table->collection(ns) : nullptr;
  auto plan = rewrite::planLookupRewrite(index, view_, routing::TargetOptions{}.analysis_budget, collection);
  // After planning: an update that changes an added field is planned with the mapping that still
  // finds its document, then that mapping is forgotten until the reply confirms the change.
  if (auto learning = rewrite::planReplyLearning(index, view_, !collection || collection->simple_default_collation);
      !learning.empty())
    op.learning = std::make_shared<rewrite::ReplyLearning>(std::move(learning));
  if (plan.kind == rewrite::RewriteKind::None) {
    if (!plan.skipped.empty()) index.stats().onSkipped(plan.skipped);
    return message;
  }

  // The state keeps copies until the reply (the original, the plan; a retryable write also its
  // rewritten message): admitted against limits.max_buffered_bytes before they are made, so a
  // client pipelining large rewritten requests is refused, not held unbounded.
  env_.admitLarge(true, rewriteCopyBytes(message.size(), plan));
  auto state = std::make_shared<RewriteState>();
  state->command.assign(view_.name);
  state->db.assign(view_.db);
  state->collection.assign(view_.collection);
  state->original.assign(message.begin(), message.end());
  if (table) {
    state->original_target = routing::target(*table, view_, settings_.cursors, false);
    state->before = state->original_target.targeting;
  }
  state->plan = std::move(plan);
  // The rewritten command's view is built from the plan's parts (moving the plan kept its
  // buffers): targeted once as it will run, never decoded again from the encoded bytes.
  if (!rewritten_) rewritten_ = std::make_unique<Rewritten>();
  protocol::OpMsg& rewritten = rewritten_->msg;
  rewritten.header = msg_.header;
  rewritten.flags = msg_.flags;
  rewritten.body = state->plan.body;
  rewritten.sequences.assign(msg_.sequences.begin(), msg_.sequences.end());
  for (auto& seq : rewritten.sequences)
    if (seq.identifier == state->plan.sequence_id) seq.documents = state->plan.sequence_docs;
  if (!protocol::buildCommandView(rewritten, rewritten_->view).ok())
    throw std::logic_error("lookup rewrite produced an unreadable command");
  protocol::encodeOpMsg(rewritten.header, rewritten.flags, rewritten.body, rewritten.sequences, request_rewritten_);
  op.rewrite = std::move(state);
  const std::span<const uint8_t> out =
      op.rewrite->plan.confirm ? sendConfirmingRead(op) : std::span<const uint8_t>(request_rewritten_);
  op.rewrite->held.hold(&rewrite_held_bytes_, op.rewrite->copiedBytes());
  return out;
}

void Pipeline::noteUnplannedWrites() {
  const auto kind = view_.traits.kind;  // classified when the view was built
  if (kind != protocol::CommandKind::BulkWrite && kind != protocol::CommandKind::Aggregate &&
      view_.name != "renameCollection" && view_.name != "mapReduce" && view_.name != "mapreduce" &&
      view_.name != "create" && view_.name != "collMod" && view_.name != "cloneCollectionAsCapped")
    return;
  // Each rule once per request: a bulkWrite's nsInfo (or a pipeline's $out stages) may name the
  // same namespace hundreds of thousands of times, and every unsettleAll locks each stripe of the
  // mapping, counts an event and queues a marker for the shared mapping collection.
  std::vector<const rewrite::LookupIndex*> unsettled;
  for (const auto& target : rewrite::unplannedWriteTargets(view_, kind)) {
    auto index = env_.lookupRule(target);
    if (!index || std::find(unsettled.begin(), unsettled.end(), index.get()) != unsettled.end()) continue;
    index->unsettleAll();
    unsettled.push_back(index.get());
  }
}

void Pipeline::noteTransaction(PendingOp& op) {
  using rewrite::ReplyLearning;
  const auto kind = view_.traits.kind;  // classified when the view was built
  if (op.learning && op.learning->in_transaction) {
    op.learning->transaction = rewrite::TransactionLessons::keyOf(view_);
    return;
  }
  const bool commit = kind == protocol::CommandKind::CommitTransaction;
  if ((!commit && kind != protocol::CommandKind::AbortTransaction) || transactions_.empty()) return;
  auto ends = std::make_shared<ReplyLearning>();
  ends->transaction = rewrite::TransactionLessons::keyOf(view_);
  ends->ends = commit ? ReplyLearning::Ends::Commit : ReplyLearning::Ends::Abort;
  op.learning = std::move(ends);
}

void Pipeline::learnInTransaction(const PendingOp& op, const protocol::ReplyFacts& reply) {
  const auto& learning = *op.learning;
  if (learning.ends == rewrite::ReplyLearning::Ends::Commit) {
    if (reply.has_ok && reply.ok && !reply.write_concern_error.present) transactions_.commit(learning.transaction);
    // A commit that failed, or whose write concern failed, may still be (or become, retried)
    // committed: its changes unsettle again now; its lessons wait for the reply that tells.
    else transactions_.distrustAgain(learning.transaction);
    return;
  }
  if (learning.ends == rewrite::ReplyLearning::Ends::Abort) {
    transactions_.drop(learning.transaction);
    return;
  }
  if (!op.lookup) return;
  noteCarriedTransaction(learning.transaction);
  auto holder = transactions_.holder(learning.transaction, op.lookup);
  rewrite::applyReplyLearning(*op.lookup, learning, reply, !op.rewrite, nullptr, &holder);
  holder.holdChanges(op.learning);  // their distrust acts again when the transaction ends
  // A statement that failed aborts its transaction on the server: nothing it held will commit.
  if (reply.error()) transactions_.drop(learning.transaction);
}

void Pipeline::noteCarriedTransaction(const std::string& key) {
  auto& carried = carried_transactions_;
  if (key.empty() || std::find(carried.begin(), carried.end(), key) != carried.end()) return;
  if (carried.size() >= kCarriedTransactions) carried.erase(carried.begin());  // the oldest is forgotten
  carried.push_back(key);
}

std::span<const uint8_t> Pipeline::sendConfirmingRead(PendingOp& op) {
  auto& state = *op.rewrite;
  state.rewritten.assign(request_rewritten_.begin(), request_rewritten_.end());
  // find {lookup: v, added: m(v)} limit 1: one document proves the mapping for the whole order
  // (the rule's assertion), so the rewritten write matches what the original would.
  bson_t find = BSON_INITIALIZER, filter, projection;
  bson_append_utf8(&find, "find", -1, state.collection.data(), static_cast<int>(state.collection.size()));
  if (bson_init_static(&filter, state.plan.confirm_filter.data(), state.plan.confirm_filter.size()))
    bson_append_document(&find, "filter", -1, &filter);
  bson_append_document_begin(&find, "projection", -1, &projection);
  BSON_APPEND_INT32(&projection, "_id", 1);
  bson_append_document_end(&find, &projection);
  BSON_APPEND_INT64(&find, "limit", 1);
  BSON_APPEND_BOOL(&find, "singleBatch", true);
  bson_append_utf8(&find, "$db", -1, state.db.data(), static_cast<int>(state.db.size()));
  PendingOp read;
  read.request_id = next_proxy_request_id_--;
  read.start = Clock::now();
  read.client_request_id = op.request_id;
  read.confirming = op.rewrite;
  protocol::encodeOpMsg({0, read.request_id, 0, 0}, 0, bytesOf(find), {}, confirm_message_);
  bson_destroy(&find);
  if (!pending_.add(std::move(read))) throw ProtocolError("too many pipelined requests");
  op.lookup->stats().onEvent("retryable write: confirming read sent");
  return confirm_message_;
}

std::span<const uint8_t> Pipeline::afterConfirmingRead(const PendingOp& read, const protocol::ReplyFacts& reply) {
  auto& state = *read.confirming;
  PendingOp* client = pending_.find(read.client_request_id);
  if (!client || client->rewrite != read.confirming) return {};
  auto& stats = client->lookup->stats();
  if (rewrite::confirmsMapping(reply)) {
    stats.onEvent("retryable write: confirmed, sent rewritten");
    // What went first was the read: the observers learn that the rewritten write goes now.
    Reply superseded;
    superseded.kind = Reply::Kind::Superseded;
    superseded.rerun = &state.rewritten_target;
    superseded.fallback = false;
    notifyReply(*client, superseded);
    rerun_message_ = std::move(state.rewritten);
  } else {
    // Nothing confirmed the mapping: the client's write goes as written, for the first time (its
    // txnNumber was never used). Its reply judges the mapping as a fallback's would.
    stats.onEvent("retryable write: not confirmed, sent as written");
    stats.onFallback(rewrite::FallbackCause::Unconfirmed, state.original_target.targeting);
    Reply superseded;
    superseded.kind = Reply::Kind::Superseded;
    superseded.rerun = &state.original_target;
    notifyReply(*client, superseded);
    state.suspects = state.plan.in_keys;
    client->fell_back = client->rewrite;
    client->rewrite.reset();
    client->shards = state.original_target.shards;
    rerun_message_ = std::move(state.original);
  }
  return toUpstream(rerun_message_, false, rerun_wire_);
}

std::span<const uint8_t> Pipeline::verifyRewrite(const PendingOp& op, const protocol::ReplyFacts& reply) {
  // The original after a fallback: was the mapping wrong? (A failed rewritten read says nothing
  // of it: the original only answers in its place.)
  if (op.fell_back && op.fell_back->cause != rewrite::FallbackCause::FailedRead) {
    const auto& fb = *op.fell_back;
    op.lookup->stats().onRerunOutcome(
        rewrite::learnFromRerun(*op.lookup, fb.plan, fb.plan.command, fb.suspects, reply, reply_was_complete_));
  }
  if (!op.rewrite) return {};
  auto verdict = rewrite::verifyRewrite(op.rewrite->plan, op.rewrite->plan.command, op.lookup->rule(), reply);
  if (verdict.cause == rewrite::FallbackCause::None) return {};
  if (op.rewrite->plan.confirm) {
    // A confirmed retryable write is never re-run (its txnNumber is spent): the document moved
    // between the confirming read and the write. Counted, passed on.
    op.lookup->stats().onEvent("retryable write: confirmed, then matched nothing");
    return {};
  }
  return rerunOriginal(op, std::move(verdict));
}

std::span<const uint8_t> Pipeline::rerunOriginal(const PendingOp& op, rewrite::Verdict verdict) {
  // The rewritten command's reply is dropped; the client's original runs in its place, under a
  // request id of the proxy's own (negative: drivers never use those). Counted as what ran: the
  // rewritten attempt (already counted) plus the original, targeted as the client wrote it.
  auto& state = *op.rewrite;
  op.lookup->stats().onFallback(verdict.cause, state.original_target.targeting);
  Reply superseded;
  superseded.kind = Reply::Kind::Superseded;
  superseded.rerun = &state.original_target;
  notifyReply(op, superseded);
  spdlog::debug("conn={} lookup rewrite fell back ({})", settings_.connection_id, rewrite::fallbackCauseName(verdict.cause));
  state.suspects = std::move(verdict.suspects);
  state.cause = verdict.cause;
  PendingOp retry = op;
  retry.request_id = next_proxy_request_id_--;
  retry.client_request_id = op.request_id;
  retry.fell_back = op.rewrite;
  retry.rewrite.reset();
  retry.shards = state.original_target.shards;
  rerun_message_ = std::move(state.original);
  protocol::setRequestId(rerun_message_, retry.request_id);
  if (!pending_.add(std::move(retry))) throw ProtocolError("too many pipelined requests");
  auto rerun = toUpstream(rerun_message_, false, rerun_wire_);
  if (!verdict.live_cursor) return rerun;

  // The rewritten cursor stays open on the server and the client will never see it: close it.
  if (settings_.cursors) settings_.cursors->forget(verdict.live_cursor);
  bson_t kill = BSON_INITIALIZER, ids;
  bson_append_utf8(&kill, "killCursors", -1, state.collection.data(), static_cast<int>(state.collection.size()));
  bson_append_array_begin(&kill, "cursors", -1, &ids);
  BSON_APPEND_INT64(&ids, "0", verdict.live_cursor);
  bson_append_array_end(&kill, &ids);
  bson_append_utf8(&kill, "$db", -1, state.db.data(), static_cast<int>(state.db.size()));
  PendingOp killer;
  killer.request_id = next_proxy_request_id_--;
  killer.start = Clock::now();
  killer.discard_reply = true;
  std::vector<uint8_t> plain, compressed;
  protocol::encodeOpMsg({0, killer.request_id, 0, 0}, 0, bytesOf(kill), {}, plain);
  bson_destroy(&kill);
  if (!pending_.add(std::move(killer))) throw ProtocolError("too many pipelined requests");
  auto killBytes = toUpstream(plain, false, compressed);
  rerun_batch_.assign(killBytes.begin(), killBytes.end());
  rerun_batch_.insert(rerun_batch_.end(), rerun.begin(), rerun.end());
  return rerun_batch_;
}

}  // namespace shardscope::pipeline
