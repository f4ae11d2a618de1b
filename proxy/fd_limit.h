// The client-connection cap the open-file limit allows: each client costs two descriptors (its own
// socket and its upstream socket), and a reserve stays free for the admin endpoint, the mirror,
// discovery, capture files and logs. Past the cap the proxy refuses new clients cleanly instead
// of running out of descriptors, where accept() fails and new clients hang in the backlog.
#pragma once
#include <cstdint>

namespace shardscope::proxy {

constexpr uint64_t kReservedDescriptors = 128;

// The cap for an open-file limit: min(configured, (limit - reserve) / 2), at least 1.
uint32_t connectionCapFor(uint64_t fdLimit, uint32_t configured);

struct FdBudget {
  uint64_t limit = 0;       // the soft limit in force after raising it
  uint32_t connections = 0;  // the effective client-connection cap
};
// Raises the soft RLIMIT_NOFILE to the hard limit (as far as the kernel allows) and derives the cap.
FdBudget raiseFdLimit(uint32_t configured);

// A descriptor kept open so that, when accept() fails for lack of descriptors, one can be freed to
// accept the waiting client and close it at once (a clean refusal rather than a hang).
class SpareDescriptor {
 public:
  SpareDescriptor();
  ~SpareDescriptor();
  SpareDescriptor(const SpareDescriptor&) = delete;
  SpareDescriptor& operator=(const SpareDescriptor&) = delete;
  // Accepts one pending connection on `listenFd` with the spare's slot and closes it. Returns true
  // when a connection was refused this way.
  bool refuseOne(int listenFd);

 private:
  int fd_ = -1;
};

}  // namespace shardscope::proxy
