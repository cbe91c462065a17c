// tessel::http::Client on Beast: each call runs as completion handlers on its
// Client's strand of the ClientLoop's io_context (resolve, connect, TLS handshake,
// write, read), bounded by one deadline; nothing blocks the loop's thread.
#include "tessel/http/client.hpp"

#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/strand.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/beast/core/tcp_stream.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/ssl.hpp>
#include <future>
#include <optional>
#include <thread>

namespace tessel::http {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace bhttp = boost::beast::http;
namespace ssl = boost::asio::ssl;
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

Result<HttpUrl> parse_http_url(const std::string& url) {
  auto bad = [&](const std::string& why) { return Error::invalid("URL \"" + url + "\": " + why, "url"); };
  HttpUrl out;
  std::string rest;
  if (url.rfind("http://", 0) == 0) {
    rest = url.substr(7);
    out.port = 80;
  } else if (url.rfind("https://", 0) == 0) {
    rest = url.substr(8);
    out.tls = true;
    out.port = 443;
  } else {
    return bad("must start with http:// or https://");
  }
  if (!rest.empty() && rest.back() == '/') rest.pop_back();
  if (rest.find_first_of("/?#@") != std::string::npos) return bad("expected only a host and a port");
  std::string port_text;
  if (!rest.empty() && rest.front() == '[') {  // [IPv6]:port
    const auto close = rest.find(']');
    if (close == std::string::npos) return bad("unclosed [");
    out.host = rest.substr(1, close - 1);
    if (close + 1 < rest.size()) {
      if (rest[close + 1] != ':') return bad("expected :PORT after ]");
      port_text = rest.substr(close + 2);
      if (port_text.empty()) return bad("port must be a number");
    }
  } else {
    const auto colon = rest.rfind(':');
    out.host = rest.substr(0, colon);
    if (colon != std::string::npos) {
      port_text = rest.substr(colon + 1);
      if (port_text.empty()) return bad("port must be a number");
    }
  }
  if (out.host.empty()) return bad("no host");
  if (!port_text.empty()) {
    if (port_text.size() > 5 || port_text.find_first_not_of("0123456789") != std::string::npos)
      return bad("port must be a number");
    out.port = std::stoi(port_text);
    if (out.port < 1 || out.port > 65535) return bad("port must be 1-65535");
  }
  return out;
}

Result<std::vector<HttpUrl>> parse_http_urls(const std::string& urls) {
  std::vector<HttpUrl> out;
  size_t start = 0;
  for (;;) {
    const size_t comma = urls.find(',', start);
    std::string one = urls.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
    const size_t first = one.find_first_not_of(' ');
    one = first == std::string::npos ? "" : one.substr(first, one.find_last_not_of(' ') - first + 1);
    auto u = parse_http_url(one);
    if (!u) return u.error();
    out.push_back(*u);
    if (comma == std::string::npos) return out;
    start = comma + 1;
  }
}

Result<HttpUrl> parse_url_origin(const std::string& url) {
  const size_t scheme = url.find("://");
  const size_t end = scheme == std::string::npos ? std::string::npos : url.find_first_of("/?#", scheme + 3);
  auto origin = parse_http_url(url.substr(0, end));
  if (!origin) return Error::invalid("location: " + origin.error().message, "location");
  return origin;
}

struct Client::Impl : std::enable_shared_from_this<Client::Impl> {
  Impl(ClientLoop::Impl& l, std::string h, int p, ClientOptions o)
      : loop(l), strand(asio::make_strand(l.ioc)), resolver(strand), host(std::move(h)), port(p), opts(std::move(o)) {
    if (!opts.tls) return;
    ssl_ctx.emplace(ssl::context::tls_client);
    error_code ec;
    if (opts.ca_file.empty())
      ssl_ctx->set_default_verify_paths(ec);
    else
      ssl_ctx->load_verify_file(opts.ca_file, ec);
    if (ec)
      setup_error =
          "loading CA certificates" + (opts.ca_file.empty() ? "" : " from " + opts.ca_file) + ": " + ec.message();
    ssl_ctx->set_verify_mode(ssl::verify_peer);
  }

  // Everything below runs on `strand`.
  void start(const std::string& method, const std::string& target, std::string body, std::chrono::milliseconds timeout,
             Callback cb) {
    if (done) return cb(Error::internal("http client: a call is already in flight"));
    done = std::move(cb);
    if (cancelled) return fail("cancelled");
    if (!setup_error.empty()) return fail(setup_error);
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
    if (connected()) {
      reused = true;
      return send();
    }
    connect();
  }

  bool connected() const {
    return plain ? plain->socket().is_open() : tls ? tls->next_layer().socket().is_open() : false;
  }
  beast::tcp_stream& tcp_layer() { return plain ? *plain : tls->next_layer(); }

  void connect() {
    reused = false;
    close();
    if (opts.tls)
      tls.emplace(strand, *ssl_ctx);
    else
      plain.emplace(strand);
    resolver.async_resolve(host, std::to_string(port),
                           [self = shared_from_this()](error_code ec, const tcp::resolver::results_type& results) {
                             if (ec) return self->fail_on(ec, "resolving " + self->host);
                             if (!self->plain && !self->tls) return self->fail("cancelled");
                             auto& layer = self->tcp_layer();
                             layer.expires_at(std::min(self->deadline, Clock::now() + self->opts.connect_timeout));
                             layer.async_connect(results, [self](error_code ec, const tcp::endpoint&) {
                               if (ec) return self->fail_on(ec, "connecting");
                               error_code ignored;
                               self->tcp_layer().socket().set_option(tcp::no_delay(true), ignored);
                               if (self->tls) return self->handshake();
                               self->send();
                             });
                           });
  }

  void handshake() {
    // SNI, and the certificate must name the host.
    if (!SSL_set_tlsext_host_name(tls->native_handle(), host.c_str()))
      return fail_on(error_code(static_cast<int>(::ERR_get_error()), asio::error::get_ssl_category()), "TLS set-up");
    tls->set_verify_callback(ssl::host_name_verification(host));
    tcp_layer().expires_at(deadline);
    tls->async_handshake(ssl::stream_base::client, [self = shared_from_this()](error_code ec) {
      if (ec) return self->fail_on(ec, "TLS handshake");
      self->send();
    });
  }

  void send() {
    tcp_layer().expires_at(deadline);
    if (tls)
      write_then_read(*tls);
    else
      write_then_read(*plain);
  }

  template <class Stream>
  void write_then_read(Stream& s) {
    bhttp::async_write(s, req, [self = shared_from_this(), &s](error_code ec, size_t) {
      if (ec) return self->retry_or_fail(ec, "sending");
      self->parser.emplace();
      self->parser->body_limit(self->opts.max_body_bytes);
      self->buffer.clear();
      bhttp::async_read(s, self->buffer, *self->parser, [self](error_code ec, size_t) { self->on_read(ec); });
    });
  }

  void on_read(error_code ec) {
    if (ec) return retry_or_fail(ec, "reading the answer");
    auto res = parser->release();
    ClientResponse out;
    out.status = static_cast<int>(res.result_int());
    out.content_type = std::string(res[bhttp::field::content_type]);
    out.location = std::string(res[bhttp::field::location]);
    out.body = std::move(res.body());
    if (!opts.keep_alive || !res.keep_alive()) close();
    finish(std::move(out));
  }

  // A kept-alive connection the server closed while it was idle fails at the first
  // write, or at the read before any byte of an answer: connect and send once more.
  void retry_or_fail(error_code ec, const std::string& doing) {
    const bool closed_while_idle = ec == bhttp::error::end_of_stream || ec == asio::error::connection_reset ||
                                   ec == asio::error::broken_pipe || ec == asio::error::eof ||
                                   ec == ssl::error::stream_truncated;
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
    finish(Error::unavailable(std::string(opts.tls ? "https://" : "http://") + host + ":" + std::to_string(port) +
                              ": " + why));
  }

  void finish(Result<ClientResponse> r) {
    auto cb = std::move(done);
    done = nullptr;
    if (cb) cb(std::move(r));
  }

  // Closes the connection (no TLS close_notify: the peer sees a plain close).
  void close() {
    if (!plain && !tls) return;
    error_code ignored;
    tcp_layer().socket().shutdown(tcp::socket::shutdown_both, ignored);
    tcp_layer().socket().close(ignored);
    plain.reset();
    tls.reset();
  }

  void cancel() {
    cancelled = true;
    resolver.cancel();
    if (plain || tls) {
      error_code ignored;
      tcp_layer().socket().cancel(ignored);
      tcp_layer().socket().close(ignored);
    }
  }

  ClientLoop::Impl& loop;
  asio::strand<asio::io_context::executor_type> strand;
  tcp::resolver resolver;
  std::string host;
  int port;
  ClientOptions opts;
  std::optional<ssl::context> ssl_ctx;
  std::string setup_error;
  // One of them while connected.
  std::optional<beast::tcp_stream> plain;
  std::optional<beast::ssl_stream<beast::tcp_stream>> tls;
  beast::flat_buffer buffer;
  bhttp::request<bhttp::string_body> req;
  std::optional<bhttp::response_parser<bhttp::string_body>> parser;
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
    self->start(method, target, std::move(body), timeout, std::move(done));
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
