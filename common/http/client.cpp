// tessel::http::Client on Beast: each call runs as completion handlers on its
// Client's strand of the ClientLoop's io_context (resolve, connect, write, read),
// bounded by one deadline; nothing blocks the loop's thread.
#include "tessel/http/client.hpp"

#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/strand.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/core/tcp_stream.hpp>
#include <boost/beast/http.hpp>
#include <future>
#include <optional>
#include <thread>

namespace tessel::http {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace bhttp = boost::beast::http;
using tcp = asio::ip::tcp;
using beast::error_code;
using Clock = std::chrono::steady_clock;

struct ClientLoop::Impl {
  asio::io_context ioc{1};
  asio::executor_work_guard<asio::io_context::executor_type> work{ioc.get_executor()};
  std::thread thread;
};

ClientLoop::ClientLoop() : impl_(std::make_unique<Impl>()) {
  impl_->thread = std::thread([im = impl_.get()] { im->ioc.run(); });
}

ClientLoop::~ClientLoop() {
  impl_->work.reset();
  impl_->ioc.stop();
  impl_->thread.join();
}

Result<std::pair<std::string, int>> parse_http_url(const std::string& url) {
  const std::string scheme = "http://";
  auto bad = [&](const std::string& why) { return Error::invalid("scheduler URL \"" + url + "\": " + why, "url"); };
  if (url.rfind(scheme, 0) != 0) return bad("must start with http://");
  std::string rest = url.substr(scheme.size());
  if (!rest.empty() && rest.back() == '/') rest.pop_back();
  if (rest.find('/') != std::string::npos) return bad("a path is not supported");
  const auto colon = rest.rfind(':');
  if (colon == std::string::npos || colon == 0) return bad("expected http://HOST:PORT");
  std::string host = rest.substr(0, colon);
  if (host.size() > 2 && host.front() == '[' && host.back() == ']') host = host.substr(1, host.size() - 2);
  const std::string port_text = rest.substr(colon + 1);
  if (port_text.empty() || port_text.size() > 5 || port_text.find_first_not_of("0123456789") != std::string::npos)
    return bad("port must be a number");
  const int port = std::stoi(port_text);
  if (port < 1 || port > 65535) return bad("port must be 1-65535");
  return std::pair{host, port};
}

struct Client::Impl : std::enable_shared_from_this<Client::Impl> {
  Impl(ClientLoop::Impl& l, std::string h, int p, ClientOptions o)
      : loop(l), strand(asio::make_strand(l.ioc)), resolver(strand), host(std::move(h)), port(p), opts(std::move(o)) {}

  // Everything below runs on `strand`.
  void start(std::string method, std::string target, std::string body, std::chrono::milliseconds timeout, Callback cb) {
    if (done) return cb(Error::internal("http client: a call is already in flight"));
    done = std::move(cb);
    if (cancelled) return fail("cancelled");
    req = {};
    req.method_string(method);
    req.target(target);
    req.version(11);
    req.set(bhttp::field::host, host + ":" + std::to_string(port));
    for (const auto& h : opts.headers) req.insert(h.name, h.value);
    if (!body.empty()) req.set(bhttp::field::content_type, "application/json");
    req.body() = std::move(body);
    req.keep_alive(opts.keep_alive);
    req.prepare_payload();
    deadline = Clock::now() + timeout;
    if (stream && stream->socket().is_open()) {
      reused = true;
      return send();
    }
    connect();
  }

  void connect() {
    reused = false;
    stream.emplace(strand);
    resolver.async_resolve(
        host, std::to_string(port), [self = shared_from_this()](error_code ec, tcp::resolver::results_type results) {
          if (ec) return self->fail_on(ec, "resolving " + self->host);
          self->stream->expires_at(std::min(self->deadline, Clock::now() + self->opts.connect_timeout));
          self->stream->async_connect(results, [self](error_code ec, const tcp::endpoint&) {
            if (ec) return self->fail_on(ec, "connecting");
            error_code ignored;
            self->stream->socket().set_option(tcp::no_delay(true), ignored);
            self->send();
          });
        });
  }

  void send() {
    stream->expires_at(deadline);
    bhttp::async_write(*stream, req, [self = shared_from_this()](error_code ec, size_t) {
      if (ec) return self->retry_or_fail(ec, "sending");
      self->parser.emplace();
      self->parser->body_limit(self->opts.max_body_bytes);
      self->buffer.clear();
      bhttp::async_read(*self->stream, self->buffer, *self->parser,
                        [self](error_code ec, size_t) { self->on_read(ec); });
    });
  }

  void on_read(error_code ec) {
    if (ec) return retry_or_fail(ec, "reading the answer");
    auto res = parser->release();
    ClientResponse out;
    out.status = static_cast<int>(res.result_int());
    out.content_type = std::string(res[bhttp::field::content_type]);
    out.body = std::move(res.body());
    if (!opts.keep_alive || !res.keep_alive()) close();
    finish(std::move(out));
  }

  // A kept-alive connection the server closed while it was idle fails at the first
  // write, or at the read before any byte of an answer: connect and send once more.
  void retry_or_fail(error_code ec, const std::string& doing) {
    const bool closed_while_idle = ec == bhttp::error::end_of_stream || ec == asio::error::connection_reset ||
                                   ec == asio::error::broken_pipe || ec == asio::error::eof;
    if (reused && closed_while_idle && !cancelled && Clock::now() < deadline) return connect();
    fail_on(ec, doing);
  }

  void fail_on(error_code ec, const std::string& doing) {
    close();
    if (cancelled) return fail("cancelled");
    if (ec == beast::error::timeout) return fail(doing + ": timed out");
    fail(doing + ": " + ec.message());
  }

  void fail(const std::string& why) {
    finish(Error::unavailable("http://" + host + ":" + std::to_string(port) + ": " + why));
  }

  void finish(Result<ClientResponse> r) {
    auto cb = std::move(done);
    done = nullptr;
    if (cb) cb(std::move(r));
  }

  void close() {
    if (!stream) return;
    error_code ignored;
    stream->socket().shutdown(tcp::socket::shutdown_both, ignored);
    stream->socket().close(ignored);
    stream.reset();
  }

  void cancel() {
    cancelled = true;
    resolver.cancel();
    if (stream) {
      error_code ignored;
      stream->socket().cancel(ignored);
      stream->socket().close(ignored);
    }
  }

  ClientLoop::Impl& loop;
  asio::strand<asio::io_context::executor_type> strand;
  tcp::resolver resolver;
  std::optional<beast::tcp_stream> stream;
  beast::flat_buffer buffer;
  bhttp::request<bhttp::string_body> req;
  std::optional<bhttp::response_parser<bhttp::string_body>> parser;
  std::string host;
  int port;
  ClientOptions opts;
  Callback done;
  Clock::time_point deadline;
  bool reused = false;
  bool cancelled = false;
};

Client::Client(ClientLoop& loop, std::string host, int port, ClientOptions opts)
    : impl_(std::make_shared<Impl>(*loop.impl_, std::move(host), port, std::move(opts))) {}

Client::~Client() { cancel(); }

void Client::cancel() {
  asio::post(impl_->strand, [self = impl_] { self->cancel(); });
}

void Client::call_async(std::string method, std::string target, std::string body, std::chrono::milliseconds timeout,
                        Callback done) {
  asio::post(impl_->strand, [self = impl_, method = std::move(method), target = std::move(target),
                             body = std::move(body), timeout, done = std::move(done)]() mutable {
    self->start(std::move(method), std::move(target), std::move(body), timeout, std::move(done));
  });
}

Result<ClientResponse> Client::call(std::string method, std::string target, std::string body,
                                    std::chrono::milliseconds timeout) {
  if (std::this_thread::get_id() == impl_->loop.thread.get_id())
    return Error::internal("http client: a blocking call from the client loop's own thread");
  auto promise = std::make_shared<std::promise<Result<ClientResponse>>>();
  auto answer = promise->get_future();
  call_async(std::move(method), std::move(target), std::move(body), timeout,
             [promise](Result<ClientResponse> r) { promise->set_value(std::move(r)); });
  try {
    return answer.get();
  } catch (const std::future_error&) {  // The loop stopped with the call queued.
    return Error::unavailable("http client: the client loop stopped");
  }
}

}  // namespace tessel::http
