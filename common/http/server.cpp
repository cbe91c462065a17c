// tessel::http::Server on Boost.Beast: one Connection object per TCP connection,
// driven by completion handlers on the connection's strand. A Connection reads
// one request (head, then body), hands it to its route, and reads the next only
// once the answer is written, so pipelined requests are answered in order.
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>

#include <utility>

#include <boost/asio/bind_executor.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/strand.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/core/tcp_stream.hpp>
#include <boost/beast/http.hpp>
#include <nlohmann/json.hpp>
#include <spdlog/spdlog.h>

#include "routing.hpp"
#include "server_impl.hpp"

namespace tessel::http {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace bhttp = boost::beast::http;
using tcp = asio::ip::tcp;
using beast::error_code;

// ---------------------------------------------------------------- connections

namespace {
// A header value without the spaces and tabs around it.
std::string_view trim_ows(std::string_view v) {
  while (!v.empty() && (v.front() == ' ' || v.front() == '\t')) v.remove_prefix(1);
  while (!v.empty() && (v.back() == ' ' || v.back() == '\t')) v.remove_suffix(1);
  return v;
}
}  // namespace

class Connection : public std::enable_shared_from_this<Connection> {
 public:
  Connection(Server::Impl& srv, tcp::socket socket) : srv_(srv), stream_(std::move(socket)) {
    ++srv_.open;
    ++srv_.total;
    error_code ec;
    auto ep = stream_.socket().remote_endpoint(ec);
    if (!ec) remote_ = ep.address().to_string();
  }
  ~Connection() {
    {
      MutexLock lk(srv_.conns_mu);
      srv_.conns.erase(this);
    }
    --srv_.open;
    srv_.conns_cv.notify_all();
  }

  void start() {
    {
      MutexLock lk(srv_.conns_mu);
      srv_.conns.emplace(this, weak_from_this());
    }
    asio::dispatch(stream_.get_executor(), [self = shared_from_this()] { self->read_next(); });
  }
  // From any thread: closes the connection on its strand.
  void close_soon() {
    asio::post(stream_.get_executor(), [self = shared_from_this()] { self->close(); });
  }

  // Called on the strand by Reply.
  void respond(Response r);
  bool running() const { return srv_.running->load(); }
  bool gone() const { return gone_.load(); }
  auto executor() { return stream_.get_executor(); }
  // On the strand: Reply::on_client_gone for request number `request` (served_).
  void watch_reply(size_t request, std::function<void()> fn);
  size_t served() const { return served_; }

 private:
  friend class ChunkStream;

  void read_next();
  void read_head();
  void on_head(error_code ec);
  void read_body();
  // Why the request head frames its body in a way this server does not read, or
  // breaks HTTP/1.1's rules for a head; "" when it is fine.
  static std::string unsupported_framing(const bhttp::request_header<>& req);
  void dispatch();
  void fail_request(const Error& err);
  void write_and_continue(std::shared_ptr<bhttp::response<bhttp::string_body>> res);
  void after_response(bool keep_alive);
  void start_stream(Response r);
  // While a body streams: notices at once when the client closes or resets its end.
  void watch_client();
  void close();
  void linger();
  void on_error(error_code ec, const char* what);

  static constexpr auto kLingerTime = std::chrono::seconds(2);
  static constexpr size_t kLingerBytes = 8 << 20;

  Server::Impl& srv_;
  beast::tcp_stream stream_;
  beast::flat_buffer buffer_;
  std::optional<bhttp::request_parser<bhttp::string_body>> parser_;
  size_t served_ = 0;
  size_t answered_ = 0;  // served_ when respond() last ran.
  unsigned version_ = 11;
  bool keep_alive_ = true;
  bool closed_ = false;
  std::atomic<bool> gone_{false};                      // closed_, for other threads.
  std::vector<std::function<void()>> close_handlers_;  // BodyStream::on_close.
  std::vector<std::function<void()>> reply_handlers_;  // Reply::on_client_gone, until the answer.
  bool streaming_ = false;
  bool awaiting_reply_ = false;  // A handler watches for the client to leave before it answers.
  bool watching_ = false;        // watch_client()'s peek is pending.
  bool idle_reading_ = false;    // read_next()'s wait for the next request is pending.
  bool peer_ended_ = false;      // The peek saw the client close its end after the answer.
  char peeked_ = 0;              // Where it peeks.
  std::string remote_;
  std::chrono::steady_clock::time_point linger_deadline_{};
  size_t lingered_ = 0;
};

struct Reply::State {
  std::shared_ptr<Connection> conn;
  size_t request = 0;  // conn->served() when the request was dispatched.
  std::atomic<bool> answered{false};
  std::vector<Header> extra_headers;  // add_header(): set before the Reply is handed on.
  ~State() {
    if (!answered && conn && conn->running()) {
      Response r = error_response(Error::internal("the handler dropped the request"));
      asio::post(conn->executor(), [c = conn, r = std::move(r)]() mutable { c->respond(std::move(r)); });
    } else if (conn && conn->running()) {
      auto ex = conn->executor();
      asio::post(ex, [c = std::move(conn)] {});  // The last reference dies on the strand.
    }
  }
};

Reply::Reply(std::shared_ptr<Connection> conn) : state_(std::make_shared<State>()) {
  state_->request = conn->served();  // Made on the connection's strand, by dispatch().
  state_->conn = std::move(conn);
}

void Reply::on_client_gone(std::function<void()> fn) const {
  if (!state_ || state_->answered.load()) return;
  auto conn = state_->conn;
  if (!conn->running()) return;
  asio::post(conn->executor(), [conn, request = state_->request, fn = std::move(fn)]() mutable {
    conn->watch_reply(request, std::move(fn));
  });
}

bool Reply::client_gone() const { return state_ && state_->conn->gone(); }

void Reply::add_header(Header h) {
  if (state_) state_->extra_headers.push_back(std::move(h));
}

void Reply::operator()(Response r) const {
  if (!state_ || state_->answered.exchange(true)) return;
  r.headers.insert(r.headers.end(), state_->extra_headers.begin(), state_->extra_headers.end());
  auto conn = state_->conn;
  if (!conn->running()) return;
  asio::post(conn->executor(), [conn, r = std::move(r)]() mutable { conn->respond(std::move(r)); });
}

void Connection::on_error(error_code ec, const char* what) {
  if (ec == beast::error::timeout) {
    ++srv_.timeouts;
    spdlog::debug("{}: {} closed: {} timed out", srv_.opts.name, remote_, what);
  } else if (ec != bhttp::error::end_of_stream && ec != asio::error::eof && ec != asio::error::operation_aborted &&
             ec != asio::error::connection_reset) {
    spdlog::debug("{}: {} closed: {}: {}", srv_.opts.name, remote_, what, ec.message());
  }
  close();
}

void Connection::close() {
  if (closed_) return;
  closed_ = true;
  gone_ = true;
  error_code ec;
  stream_.socket().shutdown(tcp::socket::shutdown_both, ec);
  stream_.close();
  for (auto& fn : std::exchange(close_handlers_, {})) fn();
  for (auto& fn : std::exchange(reply_handlers_, {})) fn();
}

void Connection::watch_reply(size_t request, std::function<void()> fn) {
  if (closed_) return fn();
  if (request != served_ || answered_ == served_) return;  // Answered already.
  awaiting_reply_ = true;
  reply_handlers_.push_back(std::move(fn));
  watch_client();
}

void Connection::watch_client() {
  if (watching_) return;  // The pending peek goes on watching.
  watching_ = true;
  // A peeking receive rather than a wait for readability: it looks at once, so a client
  // that left before the watch began is seen too, then waits. It ends with a byte (the
  // client sent its next request early: left for after the answer), an end of file (the
  // client closed its end) or an error (it reset).
  stream_.socket().async_receive(
      asio::buffer(&peeked_, 1), tcp::socket::message_peek, [self = shared_from_this()](error_code ec, size_t n) {
        self->watching_ = false;
        if (self->closed_ || ec == asio::error::operation_aborted || (!ec && n > 0)) return;
        if (!(self->streaming_ || self->awaiting_reply_)) {
          // Answered already. A read after this peek's end of file would wait for an
          // event that already came (the reactor is edge-triggered and tries no read
          // before the next one) until its timeout: the client closed its end, so
          // read_next() closes ours instead, or this does when that wait is on already.
          self->peer_ended_ = true;
          if (self->idle_reading_) self->close();
          return;
        }
        spdlog::debug("{}: {} left before its answer ended", self->srv_.opts.name, self->remote_);
        self->close();
      });
}

void Connection::read_next() {
  if (closed_ || !running()) return close();
  if (buffer_.size() > 0) return read_head();  // A pipelined request is already here.
  if (peer_ended_) return close();             // No next request can come.
  // Idle keep-alive: wait for the first byte of the next request.
  stream_.expires_after(srv_.opts.limits.idle_timeout);
  idle_reading_ = true;
  stream_.async_read_some(buffer_.prepare(4096), [self = shared_from_this()](error_code ec, size_t n) {
    self->idle_reading_ = false;
    if (ec) return self->on_error(ec, "idle wait");
    self->buffer_.commit(n);
    self->read_head();
  });
}

void Connection::read_head() {
  parser_.emplace();
  parser_->header_limit(static_cast<uint32_t>(srv_.opts.limits.max_head_bytes));
  parser_->body_limit(srv_.opts.limits.max_body_bytes);
  stream_.expires_after(srv_.opts.limits.head_timeout);
  bhttp::async_read_header(stream_, buffer_, *parser_,
                           [self = shared_from_this()](error_code ec, size_t) { self->on_head(ec); });
}

void Connection::on_head(error_code ec) {
  const auto& lim = srv_.opts.limits;
  if (ec == bhttp::error::header_limit)
    return fail_request(Error{"request head exceeds " + std::to_string(lim.max_head_bytes) + " bytes",
                              ErrorCode::request_header_fields_too_large});
  if (ec == bhttp::error::body_limit)
    return fail_request(Error::too_large("request body exceeds " + std::to_string(lim.max_body_bytes) + " bytes"));
  if (ec == beast::error::timeout || ec == bhttp::error::end_of_stream || ec == asio::error::eof ||
      ec == asio::error::connection_reset || ec == asio::error::operation_aborted)
    return on_error(ec, "request head");
  if (ec) return fail_request(Error::invalid("bad request: " + ec.message()));
  const auto& req = parser_->get();
  // One framing per request: two Content-Lengths, or a Content-Length beside a
  // Transfer-Encoding, is how requests are smuggled past proxies (RFC 9112 6.3).
  size_t lengths = 0;
  for (auto it = req.find(bhttp::field::content_length); it != req.end() && it->name() == bhttp::field::content_length;
       ++it)
    ++lengths;
  if (lengths > 1) return fail_request(Error::invalid("bad request: more than one Content-Length"));
  if (lengths == 1 && req.count(bhttp::field::transfer_encoding))
    return fail_request(Error::invalid("bad request: both Content-Length and Transfer-Encoding"));
  // A body framed any other way than by `chunked` alone (gzip, "xchunked", "chunked,
  // identity") cannot be read: answering and then reading on would take that body
  // for the next request (RFC 9112 6.3). fail_request() closes the connection.
  if (auto framing = unsupported_framing(req); !framing.empty()) return fail_request(Error::invalid(framing));
  if (auto cl = parser_->content_length(); cl && *cl > lim.max_body_bytes)
    return fail_request(Error::too_large("request body exceeds " + std::to_string(lim.max_body_bytes) + " bytes"));
  if (parser_->is_done()) return dispatch();
  if (iequals(std::string(req[bhttp::field::expect]), "100-continue")) {
    auto cont = std::make_shared<std::string>("HTTP/1.1 100 Continue\r\n\r\n");
    stream_.expires_after(lim.write_timeout);
    asio::async_write(stream_, asio::buffer(*cont), [self = shared_from_this(), cont](error_code ec, size_t) {
      if (ec) return self->on_error(ec, "100 Continue");
      self->read_body();
    });
    return;
  }
  read_body();
}

std::string Connection::unsupported_framing(const bhttp::request_header<>& req) {
  size_t codings = 0;
  for (auto it = req.find(bhttp::field::transfer_encoding);
       it != req.end() && it->name() == bhttp::field::transfer_encoding; ++it) {
    if (++codings > 1 || !iequals(trim_ows(std::string_view(it->value().data(), it->value().size())), "chunked"))
      return "bad request: Transfer-Encoding other than chunked alone";
  }
  if (codings > 0 && req.version() < 11) return "bad request: Transfer-Encoding in an HTTP/1.0 request";
  // HTTP/1.1 requires Host (RFC 9112 3.2); a request without it is malformed.
  if (req.version() >= 11 && req.count(bhttp::field::host) != 1)
    return "bad request: an HTTP/1.1 request needs exactly one Host header";
  return "";
}

void Connection::read_body() {
  stream_.expires_after(srv_.opts.limits.body_timeout);
  bhttp::async_read(stream_, buffer_, *parser_, [self = shared_from_this()](error_code ec, size_t) {
    const auto& lim = self->srv_.opts.limits;
    if (ec == bhttp::error::body_limit)
      return self->fail_request(
          Error::too_large("request body exceeds " + std::to_string(lim.max_body_bytes) + " bytes"));
    if (ec == beast::error::timeout || ec == asio::error::eof || ec == asio::error::connection_reset)
      return self->on_error(ec, "request body");
    if (ec) return self->fail_request(Error::invalid("bad request: " + ec.message()));
    self->dispatch();
  });
}

void Connection::fail_request(const Error& err) {
  keep_alive_ = false;  // The rest of the stream cannot be trusted to frame a next request.
  if (parser_) version_ = parser_->get().version() == 10 ? 10 : 11;
  Response r = error_response(err);
  r.close = true;
  respond(std::move(r));
}

void Connection::dispatch() {
  auto msg = parser_->release();
  parser_.reset();
  version_ = msg.version() == 10 ? 10 : 11;
  ++served_;
  keep_alive_ = msg.keep_alive() && served_ < srv_.opts.limits.max_requests_per_connection;
  Request req;
  req.method = std::string(msg.method_string());
  req.target = std::string(msg.target());
  req.path = req.target.substr(0, req.target.find('?'));
  req.version = static_cast<int>(version_);
  for (const auto& f : msg) req.headers.push_back({std::string(f.name_string()), std::string(f.value())});
  req.body = std::move(msg.body());
  req.remote = remote_;

  const Router::Route* route = nullptr;
  switch (srv_.router.match(req.method, req.path, &route, req.captures)) {
    case Router::Match::no_path:
      return respond(error_response(Error::not_found("no such endpoint: " + req.method + " " + req.path)));
    case Router::Match::no_method:
      return respond(
          error_response(Error{"method " + req.method + " not allowed on " + req.path, ErrorCode::method_not_allowed}));
    case Router::Match::found: break;
  }
  // The handler bounds its own time (a long poll's timer, a log stream's reads).
  stream_.expires_never();
  Reply reply(shared_from_this());
  auto run = [route, reply, req = std::move(req), name = srv_.opts.name]() mutable {
    try {
      route->handler(req, reply);
    } catch (const std::exception& e) {
      spdlog::error("{}: {} {}: unhandled exception: {}", name, req.method, req.path, e.what());
      reply(Error::internal("internal error"));
    }
  };
  if (route->exec == Exec::blocking)
    asio::post(srv_.blocking, std::move(run));
  else
    run();
}

void Connection::respond(Response r) {
  if (closed_) return;
  answered_ = served_;
  awaiting_reply_ = false;  // Answered: a client that leaves now is the answer's writer's business.
  reply_handlers_.clear();
  if (r.close) keep_alive_ = false;
  if (r.stream) return start_stream(std::move(r));
  auto res = std::make_shared<bhttp::response<bhttp::string_body>>(static_cast<bhttp::status>(r.status), version_);
  res->set(bhttp::field::content_type, r.content_type);
  for (const auto& h : r.headers) res->insert(h.name, h.value);
  res->body() = std::move(r.body);
  res->keep_alive(keep_alive_);
  res->prepare_payload();
  write_and_continue(std::move(res));
}

void Connection::write_and_continue(std::shared_ptr<bhttp::response<bhttp::string_body>> res) {
  stream_.expires_after(srv_.opts.limits.write_timeout);
  auto& message = *res;  // Kept alive by the handler, which owns `res`.
  bhttp::async_write(stream_, message, [self = shared_from_this(), res = std::move(res)](error_code ec, size_t) {
    if (ec) return self->on_error(ec, "response");
    self->after_response(self->keep_alive_);
  });
}

void Connection::after_response(bool keep_alive) {
  if (keep_alive) return read_next();
  // Half-close, then read and drop what the client still sends for a moment (a
  // lingering close, as nginx does): closing with unread bytes would send a reset
  // that can destroy the answer before the client reads it (a 413 while it still
  // uploads its body).
  error_code ec;
  stream_.socket().shutdown(tcp::socket::shutdown_send, ec);
  if (ec) return close();
  linger_deadline_ = std::chrono::steady_clock::now() + kLingerTime;
  linger();
}

void Connection::linger() {
  const auto left = linger_deadline_ - std::chrono::steady_clock::now();
  if (left <= std::chrono::steady_clock::duration::zero() || lingered_ > kLingerBytes || peer_ended_) return close();
  buffer_.clear();
  stream_.expires_after(left);
  stream_.async_read_some(buffer_.prepare(size_t{16} * 1024), [self = shared_from_this()](error_code ec, size_t n) {
    if (ec) return self->close();
    self->lingered_ += n;
    self->linger();
  });
}

// A chunked (HTTP/1.1) or close-delimited (HTTP/1.0) response body.
class ChunkStream final : public BodyStream {
 public:
  ChunkStream(std::shared_ptr<Connection> conn, bool chunked) : conn_(std::move(conn)), chunked_(chunked) {}
  bool open() const override { return !conn_->gone_.load() && conn_->running(); }

  void on_close(std::function<void()> fn) override {
    asio::post(conn_->executor(), [c = conn_, fn = std::move(fn)]() mutable {
      if (c->closed_) return fn();
      c->close_handlers_.push_back(std::move(fn));
    });
  }

  ~ChunkStream() override {
    if (!finished_.exchange(true) && conn_->running())
      asio::post(conn_->executor(), [c = conn_] { c->close(); });  // Dropped mid-body: the client sees a cut stream.
    else if (conn_->running()) {
      auto ex = conn_->executor();
      asio::post(ex, [c = std::move(conn_)] {});  // The last reference dies on the strand.
    }
  }

  void write(std::string data, std::function<void(bool)> done) override {
    if (!conn_->running()) return done(false);
    auto buf = std::make_shared<std::string>(std::move(data));
    asio::post(conn_->executor(), [c = conn_, buf, done = std::move(done), chunked = chunked_]() mutable {
      if (c->closed_) return done(false);
      if (buf->empty()) return done(true);  // An empty chunk would end the body.
      c->stream_.expires_after(c->srv_.opts.limits.write_timeout);
      auto handler = [c, buf, done = std::move(done)](error_code ec, size_t) {
        if (ec) c->on_error(ec, "stream chunk");
        done(!ec);
      };
      if (chunked)
        asio::async_write(c->stream_, bhttp::make_chunk(asio::buffer(*buf)), std::move(handler));
      else
        asio::async_write(c->stream_, asio::buffer(*buf), std::move(handler));
    });
  }

  void finish() override {
    if (finished_.exchange(true) || !conn_->running()) return;
    asio::post(conn_->executor(), [c = conn_, chunked = chunked_] {
      if (c->closed_) return;
      c->streaming_ = false;
      c->close_handlers_.clear();  // Ended: nothing to stop any more.
      if (!chunked) return c->after_response(false);
      auto last = std::make_shared<bhttp::chunk_last<bhttp::chunk_crlf>>();
      c->stream_.expires_after(c->srv_.opts.limits.write_timeout);
      asio::async_write(c->stream_, *last, [c, last](error_code ec, size_t) {
        if (ec) return c->on_error(ec, "stream end");
        c->after_response(c->keep_alive_);
      });
    });
  }

 private:
  std::shared_ptr<Connection> conn_;
  const bool chunked_;
  std::atomic<bool> finished_{false};
};

void Connection::start_stream(Response r) {
  const bool chunked = version_ == 11;
  if (!chunked) keep_alive_ = false;  // HTTP/1.0: the body ends with the connection.
  auto res = std::make_shared<bhttp::response<bhttp::empty_body>>(static_cast<bhttp::status>(r.status), version_);
  res->set(bhttp::field::content_type, r.content_type);
  for (const auto& h : r.headers) res->insert(h.name, h.value);
  res->keep_alive(keep_alive_);
  if (chunked) res->chunked(true);
  auto sr = std::make_shared<bhttp::response_serializer<bhttp::empty_body>>(*res);
  stream_.expires_after(srv_.opts.limits.write_timeout);
  bhttp::async_write_header(
      stream_, *sr,
      [self = shared_from_this(), res, sr, chunked, producer = std::move(r.stream)](error_code ec, size_t) {
        if (ec) return self->on_error(ec, "stream head");
        self->stream_.expires_never();
        self->streaming_ = true;
        self->watch_client();
        producer(std::make_shared<ChunkStream>(self, chunked));
      });
}

// ---------------------------------------------------------------- server

namespace {
// Past max_connections: a fixed 503 (`unavailable`), written at once, then close.
const std::string& overloaded_answer() {
  static const std::string text = [] {
    const Response r = error_response(Error::unavailable("too many open connections; retry later"));
    return "HTTP/1.1 " + std::to_string(r.status) + " " +
           std::string(bhttp::obsolete_reason(static_cast<bhttp::status>(r.status))) +
           "\r\nContent-Type: application/json\r\nContent-Length: " + std::to_string(r.body.size()) +
           "\r\nRetry-After: 1\r\nConnection: close\r\n\r\n" + r.body;
  }();
  return text;
}

void reject(Server::Impl& srv, tcp::socket socket) {
  const std::string& text = overloaded_answer();
  ++srv.rejected;
  auto sock = std::make_shared<tcp::socket>(std::move(socket));
  asio::async_write(*sock, asio::buffer(text), [sock](error_code, size_t) {
    error_code ec;
    sock->shutdown(tcp::socket::shutdown_both, ec);
    sock->close(ec);
  });
}
}  // namespace

void Server::Impl::accept_next() {
  acceptor.async_accept(asio::make_strand(ioc), [this](error_code ec, tcp::socket socket) {
    if (!running->load()) return;
    if (ec) {
      if (ec == asio::error::operation_aborted) return;
      // Out of file descriptors and the like: back off instead of spinning.
      spdlog::warn("{}: accept: {}", opts.name, ec.message());
      auto t = std::make_shared<asio::steady_timer>(ioc, std::chrono::milliseconds(100));
      t->async_wait([this, t](error_code) {
        if (running->load()) accept_next();
      });
      return;
    }
    error_code ignored;
    socket.set_option(tcp::no_delay(true), ignored);
    if (open.load() >= opts.limits.max_connections)
      reject(*this, std::move(socket));
    else
      std::make_shared<Connection>(*this, std::move(socket))->start();
    accept_next();
  });
}

Server::Server(ServerOptions opts, Router router) : impl_(std::make_unique<Impl>(std::move(opts), std::move(router))) {}

Server::~Server() { stop(); }

Result<int> Server::start() {
  auto& im = *impl_;
  error_code ec;
  const auto addr = asio::ip::make_address(im.opts.host, ec);
  if (ec) return Error::invalid("listen address " + im.opts.host + ": " + ec.message(), "listen");
  const tcp::endpoint ep(addr, static_cast<uint16_t>(im.opts.port));
  const std::string where = im.opts.host + ":" + std::to_string(im.opts.port);
  im.acceptor.open(ep.protocol(), ec);
  if (!ec) im.acceptor.set_option(asio::socket_base::reuse_address(true), ec);
  if (!ec) im.acceptor.bind(ep, ec);
  if (!ec) im.acceptor.listen(asio::socket_base::max_listen_connections, ec);
  if (ec) return Error::unavailable("cannot listen on " + where + ": " + ec.message());
  port_ = im.acceptor.local_endpoint().port();
  im.running->store(true);
  im.work.emplace(im.ioc.get_executor());
  im.accept_next();
  for (int i = 0; i < im.opts.io_threads; ++i) im.threads.emplace_back([&im] { im.ioc.run(); });
  return port_;
}

void Server::stop() {
  auto& im = *impl_;
  {
    MutexLock lk(im.stop_mu);
    if (im.stopped) return;
    im.stopped = true;
  }
  im.running->store(false);
  asio::post(im.ioc, [&im] {
    error_code ec;
    im.acceptor.close(ec);
  });
  // Close every connection; their pending operations end with operation_aborted and
  // release them. Give that a moment, then stop whatever is left (timers).
  std::vector<std::shared_ptr<Connection>> live;
  {
    MutexLock lk(im.conns_mu);
    for (auto& [_, weak] : im.conns)
      if (auto c = weak.lock()) live.push_back(std::move(c));
  }
  for (auto& c : live) c->close_soon();
  live.clear();
  {
    MutexLock lk(im.conns_mu);
    im.conns_cv.wait_for(im.conns_mu, std::chrono::seconds(2),
                         [&im]() REQUIRES(im.conns_mu) { return im.conns.empty(); });
  }
  im.work.reset();
  im.ioc.stop();
  for (auto& t : im.threads) t.join();
  im.threads.clear();
  im.blocking.join();
}

int Server::io_threads() const { return impl_->opts.io_threads; }

ServerStats Server::stats() const {
  return {impl_->open.load(), impl_->total.load(), impl_->rejected.load(), impl_->timeouts.load()};
}

void Server::after(std::chrono::milliseconds delay, std::function<void()> fn) {
  if (!impl_->running->load()) return;
  auto t = std::make_shared<asio::steady_timer>(impl_->ioc, delay);
  t->async_wait([t, fn = std::move(fn), running = impl_->running](error_code ec) {
    if (!ec && running->load()) fn();
  });
}

void Server::post_blocking(std::function<void()> fn) { asio::post(impl_->blocking, std::move(fn)); }

}  // namespace tessel::http
