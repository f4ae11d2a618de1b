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
  // `op` is the operation's persistent part (the same one its onRequest saw as op.pending).
  virtual void onReply(const PendingOp& op, const Reply& reply) = 0;
  virtual void onClose() {}
  // Whether it reads a cursor reply's documents. False: a large cursor reply may stream to the
  // client, this observer then sees a summary of it, every field but the batch (issue 29).
  virtual bool needsReplyDocuments() const { return true; }
};

}  // namespace shardscope::pipeline
