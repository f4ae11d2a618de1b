// Traffic capture (shadow/capture_writer.h) as a plug-in, on when capture.file is set: each
// connection's requests and replies handed to the writer by its observer, the /stats section and
// metrics.
#pragma once
#include "features/feature.h"
#include "shadow/capture_writer.h"

namespace shardscope::features {

class CaptureFeature final : public Feature {
 public:
  bool setUp(const config::Config& config, proxy::ProxyContext& ctx, std::string& error) override;
  std::unique_ptr<pipeline::Observer> attach(const Connection& connection) override;
  void extendAdmin(admin::AdminExtension& admin) override;
  void restartRequired(const config::Config& running, const config::Config& next,
                       std::vector<std::string>& keys) const override;

 private:
  // Null unless capture.file is set. Written and closed when the feature goes (after every
  // connection), so the last records of a draining connection are in the file.
  std::unique_ptr<shadow::CaptureWriter> capture_;
};

}  // namespace shardscope::features
