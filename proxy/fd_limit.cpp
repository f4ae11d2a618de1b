#include "proxy/fd_limit.h"

#include <fcntl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>

namespace shardscope::proxy {

uint32_t connectionCapFor(uint64_t fdLimit, uint32_t configured) {
  uint64_t usable = fdLimit > kReservedDescriptors ? fdLimit - kReservedDescriptors : 0;
  return static_cast<uint32_t>(std::max<uint64_t>(1, std::min<uint64_t>(configured, usable / 2)));
}

FdBudget raiseFdLimit(uint32_t configured) {
  FdBudget b;
  rlimit rl{};
  if (::getrlimit(RLIMIT_NOFILE, &rl) != 0) {
    b.connections = configured;
    return b;
  }
  if (rl.rlim_cur < rl.rlim_max) {
    rlimit raised = rl;
    raised.rlim_cur = rl.rlim_max;
    if (::setrlimit(RLIMIT_NOFILE, &raised) == 0) rl = raised;
  }
  b.limit = rl.rlim_cur == RLIM_INFINITY ? UINT64_MAX : static_cast<uint64_t>(rl.rlim_cur);
  b.connections = connectionCapFor(b.limit, configured);
  return b;
}

SpareDescriptor::SpareDescriptor() : fd_(::open("/dev/null", O_RDONLY | O_CLOEXEC)) {}

SpareDescriptor::~SpareDescriptor() {
  if (fd_ >= 0) ::close(fd_);
}

bool SpareDescriptor::refuseOne(int listenFd) {
  if (fd_ < 0) fd_ = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
  if (fd_ < 0) return false;
  ::close(fd_);
  fd_ = -1;
  int client = ::accept4(listenFd, nullptr, nullptr, SOCK_CLOEXEC | SOCK_NONBLOCK);
  if (client >= 0) ::close(client);
  fd_ = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
  return client >= 0;
}

}  // namespace shardscope::proxy
