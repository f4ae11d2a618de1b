// What the last live reload did (features/reloader.cpp writes it): read by /config's "reload"
// section and by the health every surface shows (admin/health.h), so a refused reload is one fact
// in both places rather than a line only /config carries.
#pragma once
#include <cstdint>
#include <mutex>
#include <string>

namespace shardscope::proxy {

class ReloadStatus {
 public:
  struct View {
    uint64_t reloads = 0, refused = 0;
    bool last_refused = false;  // the latest attempt was refused: the config before it is in force
    std::string last_at;        // ISO 8601 UTC of the latest attempt; "" = none yet
    std::string last_error;     // why it was refused; "" when it was applied
  };

  void onApplied(std::string at) {
    std::lock_guard lock(mutex_);
    ++view_.reloads;
    view_.last_refused = false;
    view_.last_at = std::move(at);
    view_.last_error.clear();
  }
  void onRefused(std::string at, std::string why) {
    std::lock_guard lock(mutex_);
    ++view_.refused;
    view_.last_refused = true;
    view_.last_at = std::move(at);
    view_.last_error = std::move(why);
  }
  View view() const {
    std::lock_guard lock(mutex_);
    return view_;
  }

 private:
  mutable std::mutex mutex_;
  View view_;
};

}  // namespace shardscope::proxy
