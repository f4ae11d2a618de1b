// The drained read (proxy/drained_read.h) on real loopback sockets: after a short read the next
// read waits for epoll instead of first trying a recv that fails (one recv per message where
// Asio's own read makes two), and nothing that arrives in between is lost. The recv calls are
// counted by interposing recv for the watched descriptor (the reads call the C library's recv).
#include "proxy/drained_read.h"

#include <dlfcn.h>
#include <gtest/gtest.h>

#include <atomic>
#include <memory>
#include <string>
#include <utility>

namespace {
std::atomic<int> g_drained_read_watched_fd{-1};
std::atomic<int> g_drained_read_recvs{0};
}  // namespace

extern "C" ssize_t recv(int fd, void* buf, size_t n, int flags) {
  using Recv = ssize_t (*)(int, void*, size_t, int);
  static const Recv real = reinterpret_cast<Recv>(dlsym(RTLD_NEXT, "recv"));
  if (fd == g_drained_read_watched_fd.load()) g_drained_read_recvs.fetch_add(1);
  return real(fd, buf, n, flags);
}

namespace shardscope::proxy {
namespace {

// A connected pair on 127.0.0.1: `reader` (non-blocking, as Stream makes it) and `writer`.
struct LoopbackPair {
  asio::io_context io;
  tcp::socket writer{io};
  std::unique_ptr<RelaySocket> reader;

  LoopbackPair() {
    tcp::acceptor acceptor(io, tcp::endpoint(asio::ip::address_v4::loopback(), 0));
    writer.connect(acceptor.local_endpoint());
    reader = std::make_unique<RelaySocket>(acceptor.accept());
    reader->non_blocking(true);
    g_drained_read_watched_fd = reader->native_handle();
    g_drained_read_recvs = 0;
  }
  ~LoopbackPair() { g_drained_read_watched_fd = -1; }

  void send(const std::string& bytes) { asio::write(writer, asio::buffer(bytes)); }
};

enum class ReadKind { Drained, AsioOwn };

// `messages` round trips: each read starts before its message is sent (the message is posted to
// run once the reading coroutine waits), as a relay's next read starts before the next request.
int recvsPerMessages(ReadKind kind, int messages) {
  LoopbackPair pair;
  int received = 0;
  asio::co_spawn(
      pair.io,
      [&]() -> awaitable<void> {
        char buffer[16 * 1024];
        for (int i = 0; i < messages; ++i) {
          const std::string message(100, static_cast<char>('a' + i % 26));
          asio::post(pair.io, [&pair, message] { pair.send(message); });
          const auto space = asio::buffer(buffer, sizeof buffer);
          const size_t n = kind == ReadKind::Drained ? co_await asyncReadDrained(*pair.reader, space, use_awaitable)
                                                     : co_await pair.reader->async_read_some(space, use_awaitable);
          EXPECT_EQ(std::string(buffer, n), message);
          ++received;
        }
      },
      asio::detached);
  pair.io.run();
  EXPECT_EQ(received, messages);
  return g_drained_read_recvs.load();
}

TEST(DrainedRead, OneRecvPerMessageWhereAsiosOwnReadMakesTwo) {
  constexpr int kMessages = 50;
  const int drained = recvsPerMessages(ReadKind::Drained, kMessages);
  const int asio_own = recvsPerMessages(ReadKind::AsioOwn, kMessages);
  // The first read of each finds the socket untried: one failed recv before its message.
  EXPECT_EQ(drained, kMessages + 1);
  EXPECT_EQ(asio_own, 2 * kMessages);
}

TEST(DrainedRead, BytesArrivingAfterAShortReadAreReadWithoutANewEvent) {
  LoopbackPair pair;
  std::string got;
  asio::co_spawn(
      pair.io,
      [&]() -> awaitable<void> {
        char buffer[1024];
        asio::post(pair.io, [&pair] { pair.send("first"); });
        size_t n = co_await asyncReadDrained(*pair.reader, asio::buffer(buffer), use_awaitable);
        got.append(buffer, n);
        // Sent before the next read starts, after the short read marked the socket drained: the
        // arrival's epoll event must still bring it.
        pair.send("second");
        n = co_await asyncReadDrained(*pair.reader, asio::buffer(buffer), use_awaitable);
        got.append(buffer, n);
        // A read that fills its buffer is not "drained": the rest is taken at once.
        pair.send("0123456789");
        n = co_await asyncReadDrained(*pair.reader, asio::buffer(buffer, 4), use_awaitable);
        got.append(buffer, n);
        n = co_await asyncReadDrained(*pair.reader, asio::buffer(buffer), use_awaitable);
        got.append(buffer, n);
      },
      asio::detached);
  pair.io.run();
  EXPECT_EQ(got, "firstsecond0123456789");
}

// A drained read started before `meanwhile` runs (posted once the read waits): its error and byte count.
std::pair<boost::system::error_code, size_t> readAround(void (*meanwhile)(LoopbackPair&)) {
  LoopbackPair pair;
  std::pair<boost::system::error_code, size_t> result;
  asio::co_spawn(
      pair.io,
      [&]() -> awaitable<void> {
        char buffer[64];
        asio::post(pair.io, [&pair, meanwhile] { meanwhile(pair); });
        auto [ec, n] = co_await asyncReadDrained(*pair.reader, asio::buffer(buffer), asio::as_tuple(use_awaitable));
        result = {ec, n};
      },
      asio::detached);
  pair.io.run();
  return result;
}

TEST(DrainedRead, EndOfStreamCancelAndShutdownComplete) {
  const auto eof = readAround([](LoopbackPair& pair) { pair.writer.close(); });
  EXPECT_EQ(eof.first, asio::error::eof);
  EXPECT_EQ(eof.second, 0u);
  const auto aborted = readAround([](LoopbackPair& pair) { pair.reader->cancel(); });
  EXPECT_EQ(aborted.first, asio::error::operation_aborted);
  {
    // The io_context ends with the read pending: the operation and the coroutine it holds are
    // destroyed without running (LeakSanitizer reports either left behind).
    auto pair = std::make_unique<LoopbackPair>();
    bool resumed = false;
    asio::co_spawn(
        pair->io,
        [&]() -> awaitable<void> {
          char buffer[64];
          co_await asyncReadDrained(*pair->reader, asio::buffer(buffer), asio::as_tuple(use_awaitable));
          resumed = true;
        },
        asio::detached);
    pair->io.poll();  // the coroutine starts its read and waits
    pair.reset();
    EXPECT_FALSE(resumed);
  }
}

}  // namespace
}  // namespace shardscope::proxy
