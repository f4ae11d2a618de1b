// A per-request feature (statistics, evaluation, mirror, capture): sees every operation and its
// reply, changes nothing on the wire. Its plug-in (features/feature.h) attaches one to each
// connection; the session registers whatever it is given.
#pragma once
#include "pipeline/operation.h"

namespace shardscope::pipeline {

class Observer {
 public:
  virtual ~Observer() = default;
  virtual void onRequest(const Operation& op) = 0;
  // `op` is the operation's persistent part (the same one its onRequest saw as op.pending), with
  // this observer's slot as onRequest left it; `reply.facts` were read once for all observers.
  virtual void onReply(const PendingOp& op, const Reply& reply) = 0;
  virtual void onClose() {}
  // The connection went idle with no request in flight (its session parked, issue 29): a chance to
  // give back memory kept for the next requests. Whatever it counted must stay counted.
  virtual void onIdle() {}
  // Whether it reads a cursor reply's documents. False: a large cursor reply may stream to the
  // client, this observer then sees a summary of it, every field but the batch (issue 29).
  virtual bool needsReplyDocuments() const { return true; }
  // Whether it can take a large insert's documents one at a time, as they pass (issue 29): each
  // complete document goes to onStreamedDocument (`first` for the request's first), then onRequest
  // sees the insert without its documents (its head: the body alone). True for every observer:
  // such an insert goes upstream as it arrives, never whole in memory. False: it is taken whole.
  virtual bool takesStreamedDocuments() const { return false; }
  virtual void onStreamedDocument(std::string_view /*ns*/, std::span<const uint8_t> /*doc*/, bool /*first*/) {}
  // A streamed insert's document of Pipeline::kDocumentPiecesFromBytes or more is not assembled
  // (one 16 MB document can be the whole insert): it comes in pieces as they pass, from its length
  // field on, and ends with endDocumentPieces once it proved complete and valid BSON. A connection
  // that closes in between never calls it: what begin kept goes with the next begin or onClose.
  virtual void beginDocumentPieces(size_t /*bytes*/) {}
  virtual void onDocumentPiece(std::span<const uint8_t> /*piece*/) {}
  virtual void endDocumentPieces(std::string_view /*ns*/, bool /*first*/) {}

  // This observer's slot in each PendingOp (what it keeps with a request until its reply).
  ObserverSlot& slotOf(PendingOp& op) const { return op.slots[slot_]; }
  const ObserverSlot& slotOf(const PendingOp& op) const { return op.slots[slot_]; }

 private:
  friend class Pipeline;
  size_t slot_ = 0;  // set by Pipeline::addObserver
};

}  // namespace shardscope::pipeline
