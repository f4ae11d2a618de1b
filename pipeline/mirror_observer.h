// The mirror (shadow/mirror.h) as a request-pipeline observer. It sees neither the compression
// handshake nor an injected fault, and sees the client's request id (a re-run's reply is reported
// under the original's).
#pragma once
#include <cstdint>

#include "pipeline/observer.h"
#include "shadow/mirror.h"

namespace shardscope::pipeline {

class MirrorObserver final : public Observer {
 public:
  MirrorObserver(shadow::Mirror& mirror, uint64_t connectionId) : mirror_(mirror), id_(connectionId) {}
  void onRequest(const Operation& op) override;
  void onReply(const PendingOp& op, const Reply& reply) override;
  void onClose() override { mirror_.onConnectionClose(id_); }

 private:
  shadow::Mirror& mirror_;
  uint64_t id_;
};

}  // namespace shardscope::pipeline
