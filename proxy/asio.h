// The Asio subset the proxy uses, and short names for it (also the precompiled header).
#pragma once
#include <boost/asio.hpp>
#include <boost/asio/experimental/awaitable_operators.hpp>
#include <boost/asio/ssl.hpp>

namespace shardscope::proxy {

namespace asio = boost::asio;
namespace ssl = boost::asio::ssl;
using tcp = boost::asio::ip::tcp;
using asio::awaitable;
using asio::use_awaitable;

}  // namespace shardscope::proxy
