#pragma once
// Internal to common/http: the Server's shared parts, for server.cpp and forward.cpp.

#include <algorithm>
#include <atomic>
#include <memory>
#include <unordered_map>
#include <optional>
#include <thread>
#include <vector>

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/thread_pool.hpp>

#include "tessel/http/server.hpp"
#include "tessel/sync/mutex.hpp"

namespace tessel::http {

struct Server::Impl {
  Impl(ServerOptions o, Router r)
      : opts(with_defaults(std::move(o))),
        router(std::move(r)),
        // The default concurrency hint, even for one I/O thread: hint 1 switches Asio to
        // its single-thread mode, and handlers are also posted from the blocking pool.
        ioc(BOOST_ASIO_CONCURRENCY_HINT_DEFAULT),
        acceptor(ioc),
        blocking(static_cast<size_t>(opts.blocking_threads)) {}

  static ServerOptions with_defaults(ServerOptions o) {
    if (o.io_threads <= 0) o.io_threads = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
    o.blocking_threads = std::max(1, o.blocking_threads);
    return o;
  }

  ServerOptions opts;
  Router router;
  boost::asio::io_context ioc;
  boost::asio::ip::tcp::acceptor acceptor;
  boost::asio::thread_pool blocking;
  std::optional<boost::asio::executor_work_guard<boost::asio::io_context::executor_type>> work;
  std::vector<std::thread> threads;
  // Cleared by stop(): replies and timers that come later are dropped, not posted.
  std::shared_ptr<std::atomic<bool>> running = std::make_shared<std::atomic<bool>>(false);
  Mutex stop_mu;
  bool stopped GUARDED_BY(stop_mu) = false;

  std::atomic<uint64_t> open{0}, total{0}, rejected{0}, timeouts{0};

  // Live connections, so stop() can close them.
  Mutex conns_mu;
  CondVar conns_cv;
  std::unordered_map<const Connection*, std::weak_ptr<Connection>> conns GUARDED_BY(conns_mu);

  void accept_next();
};

}  // namespace tessel::http
