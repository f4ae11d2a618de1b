// The mirror and the capture as request-pipeline observers (pipeline/observer.h). Neither sees the
// compression handshake nor an injected fault; both see the client's request id (a re-run's reply
// is reported under the original's).
#pragma once
#include <cstdint>

#include "pipeline/observer.h"
#include "proxy/capture.h"
#include "proxy/mirror.h"

namespace shardscope::proxy {

class MirrorObserver final : public pipeline::Observer {
 public:
  MirrorObserver(Mirror& mirror, uint64_t connectionId) : mirror_(mirror), id_(connectionId) {}
  void onRequest(const pipeline::Operation& op) override;
  void onReply(const pipeline::PendingOp& op, const pipeline::Reply& reply) override;
  void onClose() override { mirror_.onConnectionClose(id_); }

 private:
  Mirror& mirror_;
  uint64_t id_;
};

class CaptureObserver final : public pipeline::Observer {
 public:
  CaptureObserver(CaptureWriter& capture, uint64_t connectionId) : capture_(capture), id_(connectionId) {
    capture_.onConnectionOpen(id_);
  }
  void onRequest(const pipeline::Operation& op) override;
  void onReply(const pipeline::PendingOp& op, const pipeline::Reply& reply) override;
  void onClose() override { capture_.onConnectionClose(id_); }

 private:
  CaptureWriter& capture_;
  uint64_t id_;
};

}  // namespace shardscope::proxy
