// The capture writer (shadow/capture_writer.h) as a request-pipeline observer. It sees neither the
// compression handshake nor an injected fault, and sees the client's request id (a re-run's reply
// is reported under the original's).
#pragma once
#include <cstdint>

#include "pipeline/observer.h"
#include "shadow/capture_writer.h"

namespace shardscope::pipeline {

class CaptureObserver final : public Observer {
 public:
  CaptureObserver(shadow::CaptureWriter& capture, uint64_t connectionId) : capture_(capture), id_(connectionId) {
    capture_.onConnectionOpen(id_);
  }
  void onRequest(const Operation& op) override;
  void onReply(const PendingOp& op, const Reply& reply) override;
  void onClose() override { capture_.onConnectionClose(id_); }

 private:
  shadow::CaptureWriter& capture_;
  uint64_t id_;
};

}  // namespace shardscope::pipeline
