// An asynchronous read on a plain TCP socket that tells Asio's epoll reactor when it drained the
// socket, so the next read waits for epoll's next edge instead of first trying a recv that fails.
//
// Why: Asio 1.26 marks a socket "try the next read at once" on every readiness event and clears
// the mark only when a read returns 0 bytes (EOF). A relay in a closed loop reads each message
// whole in one short recv, then starts its next read while nothing has arrived: that read's first
// recv returns EAGAIN every time, one wasted system call per message per direction (0.41 us each
// on the bench machine; two per proxied operation beside a plain TCP relay's none). A short read
// of a stream socket means the kernel had nothing more, and with edge-triggered epoll a later
// arrival raises a new event, which sets the mark again (epoll_reactor::descriptor_state::
// perform_io), so reporting "exhausted" after a short read loses no wake-up.
//
// Built from the reactor's operation interface as Asio's own reactive_socket_recv_op is (handler
// memory from the handler's allocator, completion through handler_work); only the perform step
// differs. Used where that interface exists (the epoll reactor, no per-operation cancellation
// slot); elsewhere it is Asio's async_read_some.
#pragma once
#include <sys/socket.h>

#include <cerrno>
#include <type_traits>
#include <utility>

#include "proxy/asio.h"

// Asio's epoll reactor, whose operation interface the drained read uses.
#if defined(BOOST_ASIO_HAS_EPOLL) && !defined(BOOST_ASIO_HAS_IO_URING_AS_DEFAULT)
#define SHARDSCOPE_DRAINED_READ 1
#else
#define SHARDSCOPE_DRAINED_READ 0
#endif

namespace shardscope::proxy {

// A TCP socket whose reactor state the drained read reaches (Asio keeps it protected).
class RelaySocket : public tcp::socket {
 public:
  explicit RelaySocket(tcp::socket&& socket) : tcp::socket(std::move(socket)) {
#if SHARDSCOPE_DRAINED_READ
    reactor_ = &asio::use_service<boost::asio::detail::reactor>(asio::query(get_executor(), asio::execution::context));
#endif
  }
  auto& implementation() { return impl_.get_implementation(); }
#if SHARDSCOPE_DRAINED_READ
  // The io_context's reactor, looked up once: use_service locks the service registry and compares
  // type names on every call (~600 instructions per operation when done per read; issue 29).
  auto& reactor() { return *reactor_; }

 private:
  boost::asio::detail::reactor* reactor_;
#endif
};

#if SHARDSCOPE_DRAINED_READ
namespace drained_read_detail {

namespace ad = boost::asio::detail;

template <typename Handler, typename IoExecutor>
class DrainedRecvOp : public ad::reactor_op {
 public:
  BOOST_ASIO_DEFINE_HANDLER_PTR(DrainedRecvOp);

  DrainedRecvOp(int fd, asio::mutable_buffer buffer, Handler& handler, const IoExecutor& io_ex)
      : ad::reactor_op(boost::system::error_code(), &DrainedRecvOp::perform, &DrainedRecvOp::complete),
        fd_(fd),
        buffer_(buffer),
        handler_(std::move(handler)),
        work_(handler_, io_ex) {}

  // A short read drained the socket: "done_and_exhausted" keeps the next read from trying at once.
  static status perform(ad::reactor_op* base) {
    auto* o = static_cast<DrainedRecvOp*>(base);
    for (;;) {
      const ssize_t n = ::recv(o->fd_, o->buffer_.data(), o->buffer_.size(), 0);
      if (n > 0) {
        o->bytes_transferred_ = static_cast<size_t>(n);
        return o->bytes_transferred_ < o->buffer_.size() ? done_and_exhausted : done;
      }
      if (n == 0) {  // the peer closed (the buffer is never empty)
        o->ec_ = asio::error::eof;
        return done_and_exhausted;
      }
      if (errno == EINTR) continue;
      if (errno == EAGAIN || errno == EWOULDBLOCK) return not_done;
      o->ec_ = boost::system::error_code(errno, asio::error::get_system_category());
      return done;
    }
  }

  // As reactive_socket_recv_op::do_complete: the memory is freed before the upcall, and a null
  // owner (the io_context shutting down) destroys the handler without calling it.
  static void complete(void* owner, ad::operation* base, const boost::system::error_code&, std::size_t) {
    auto* o = static_cast<DrainedRecvOp*>(base);
    ptr p = {ad::addressof(o->handler_), o, o};
    ad::handler_work<Handler, IoExecutor> w(std::move(o->work_));
    ad::binder2<Handler, boost::system::error_code, std::size_t> handler(o->handler_, o->ec_, o->bytes_transferred_);
    p.h = ad::addressof(handler.handler_);
    p.reset();
    if (owner) {
      ad::fenced_block b(ad::fenced_block::half);
      w.complete(handler, handler.handler_);
    }
  }

 private:
  int fd_;
  asio::mutable_buffer buffer_;
  Handler handler_;
  ad::handler_work<Handler, IoExecutor> work_;
};

}  // namespace drained_read_detail

// socket.async_read_some(buffer, token), but a short read leaves the socket marked drained.
template <typename Token>
auto asyncReadDrained(RelaySocket& socket, asio::mutable_buffer buffer, Token&& token) {
  return asio::async_initiate<Token, void(boost::system::error_code, std::size_t)>(
      [&socket](auto handler, asio::mutable_buffer buffer) {
        namespace ad = drained_read_detail::ad;
        auto& impl = socket.implementation();
        // Per-operation cancellation, a blocking socket or an empty buffer: Asio's own read.
        if (asio::get_associated_cancellation_slot(handler).is_connected() ||
            !(impl.state_ & ad::socket_ops::non_blocking) || buffer.size() == 0 || !socket.is_open())
          return socket.async_read_some(buffer, std::move(handler));
        using Executor = tcp::socket::executor_type;
        using Op = drained_read_detail::DrainedRecvOp<std::decay_t<decltype(handler)>, Executor>;
        const bool continuation = boost_asio_handler_cont_helpers::is_continuation(handler);
        typename Op::ptr p = {ad::addressof(handler), Op::ptr::allocate(handler), nullptr};
        p.p = new (p.v) Op(impl.socket_, buffer, handler, socket.get_executor());
        socket.reactor().start_op(ad::reactor::read_op, impl.socket_, impl.reactor_data_, p.p, continuation, true);
        p.v = p.p = nullptr;
      },
      token, buffer);
}
#else
template <typename Token>
auto asyncReadDrained(RelaySocket& socket, asio::mutable_buffer buffer, Token&& token) {
  return socket.async_read_some(buffer, std::forward<Token>(token));
}
#endif

}  // namespace shardscope::proxy
