#pragma once
// tessel::http: the HTTP/1.1 server of the scheduler's REST API and of the agent's
// log server, on Boost.Asio and Boost.Beast.
//
// A few I/O threads (about one per core) serve every connection: a connection costs
// a socket and a small object, never a thread. A handler answers through its Reply,
// now or later and from any thread, so a parked long poll is a stored Reply waiting
// for a change or a timer. Handlers that may block (a database commit) are
// registered as Exec::blocking and run on a separate small pool, never on an I/O
// thread. Beast stays inside server.cpp and forward.cpp (it is header-heavy): this
// header names no Boost type.
//
// What the server enforces (Limits, each with a default an operator can change):
// time to read a request head, time to read its body, idle keep-alive time, head
// size (431), body size (413), open connections (past it a 503 is answered at once
// and the connection closed), requests per connection. Per RFC 9112 a request
// without Content-Length and Transfer-Encoding has an empty body, chunked request
// bodies are read, "Expect: 100-continue" is honoured, HTTP/1.0 is answered as
// HTTP/1.0, and pipelined requests are answered one by one, in order.

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "tessel/base/result.hpp"

namespace tessel::http {

struct Limits {
  std::chrono::milliseconds head_timeout{10'000};   // From a request's first byte to the end of its head.
  std::chrono::milliseconds body_timeout{30'000};   // To read the body once the head is in.
  std::chrono::milliseconds idle_timeout{60'000};   // Keep-alive: waiting for a request's first byte.
  std::chrono::milliseconds write_timeout{30'000};  // To write a response, or one chunk of a stream.
  size_t max_head_bytes = size_t{16} * 1024;        // Request line and headers; past it: 431.
  size_t max_body_bytes = 1 << 20;                  // Past it: 413.
  size_t max_connections = 65'536;                  // Open at once; past it: 503 and close.
  size_t max_requests_per_connection = 10'000;      // Then "Connection: close".
};

struct Header {
  std::string name;  // As sent; compare case-insensitively.
  std::string value;
};

struct Request {
  std::string method;  // "GET", "POST", ...
  std::string target;  // As sent: path and query.
  std::string path;    // The target before '?', not decoded.
  int version = 11;    // 10 or 11.
  std::vector<Header> headers;
  std::string body;
  std::vector<std::string> captures;  // Values of the route's {name} segments, percent-decoded.
  std::string remote;                 // Peer address.

  // The first header of that name (case-insensitive), or "" when absent.
  std::string header(std::string_view name) const;
  bool has_header(std::string_view name) const;
  // Query parameters, percent-decoded ('+' is a space); the first of that name.
  bool has_param(std::string_view name) const;
  std::string param(std::string_view name) const;
};

// A chunked response body, written piece by piece (a followed log). Thread-safe;
// one write at a time: call write() again only after `done` ran.
class BodyStream {
 public:
  virtual ~BodyStream() = default;
  // Sends `data` as one chunk; `done(false)` when the client is gone or too slow.
  virtual void write(std::string data, std::function<void(bool ok)> done) = 0;
  // Ends the body; the connection then serves its next request (or closes).
  virtual void finish() = 0;
  // False once the connection has closed: the client left (EOF or reset, seen by a
  // watch on its socket while the body streams, even if nothing is being written),
  // a write failed or timed out, or the server stops. Any thread.
  virtual bool open() const = 0;
  // Runs `fn` once on an I/O thread when the connection closes before finish() (at
  // once, posted, if it already has): the producer stops there instead of at its next
  // write, so a follower whose client left costs nothing upstream.
  virtual void on_close(std::function<void()> fn) = 0;
};

struct Response {
  int status = 200;
  std::string content_type = "application/json";
  std::string body;
  std::vector<Header> headers;  // Extra headers (e.g. WWW-Authenticate).
  bool close = false;           // Close the connection after this response.
  // When set, `body` is ignored: the head goes out with a chunked body (HTTP/1.0:
  // a body up to the close), then `stream` is called with the writer.
  std::function<void(std::shared_ptr<BodyStream>)> stream;
};

// {"error":{"code","message","field"?}} with the status that matches err.code
// (tessel::http_status_of, the one mapping).
Response error_response(const Error& err);
Response json_response(int status, std::string json_text);

class Connection;

// How a handler answers. Call it once, from any thread; the response goes out on
// the connection's own strand. A Reply dropped without an answer sends a 500.
class Reply {
 public:
  Reply() = default;
  explicit Reply(std::shared_ptr<Connection> conn);
  void operator()(Response r) const;
  void operator()(const Error& err) const { (*this)(error_response(err)); }
  explicit operator bool() const { return state_ != nullptr; }
  // Adds `h` to whatever response this Reply (and every copy of it) sends. Call it
  // before handing the Reply to anyone who may answer with it.
  void add_header(Header h);
  // For a handler that answers late (a long computation): watches the client's
  // socket until this Reply answers, and runs `fn` once on an I/O thread if the client
  // leaves first (it closes or resets its end; a half-close counts as leaving) or the
  // server stops. The connection is then closed and the answer, when it comes, is
  // dropped. Runs `fn` at once (posted) when the connection has already closed; never
  // once the Reply has answered or the server has stopped. A client that sends its next
  // request early ends the watch (it is still there). Any thread.
  void on_client_gone(std::function<void()> fn) const;
  // True once the connection has closed: the client left (seen by the watch above or
  // by a failed write), or the server stops. Any thread.
  bool client_gone() const;

 private:
  struct State;
  std::shared_ptr<State> state_;
};

using Handler = std::function<void(Request& req, Reply reply)>;

enum class Exec {
  io,        // Runs on an I/O thread: must not block (no disk writes, no waits).
  blocking,  // Runs on the blocking pool: may wait for a commit.
};

// Routes by method and path pattern: "/v1/jobs/{id}/cancel" matches exactly that
// many segments, {id} capturing one segment. Unknown path: 404; known path with
// another method: 405.
class Router {
 public:
  void add(std::string method, const std::string& pattern, Handler h, Exec exec = Exec::io);
  // Handles every request no route matches (no 404 or 405 then); e.g. a redirect of
  // everything to another server.
  void set_fallback(Handler h, Exec exec = Exec::io);
  // "METHOD /path/{capture}" for each route, in the order added (tests compare it
  // with api/openapi.yaml).
  std::vector<std::string> describe() const;

  struct Route {
    std::string method;
    std::vector<std::string> segments;  // "{...}" captures.
    Handler handler;
    Exec exec;
  };
  enum class Match { found, no_path, no_method };
  // Fills `captures` when found.
  Match match(const std::string& method, const std::string& path, const Route** route,
              std::vector<std::string>& captures) const;

 private:
  std::vector<Route> routes_;
  std::optional<Route> fallback_;
};

struct ServerOptions {
  std::string host = "127.0.0.1";
  int port = 0;        // 0: any free port (Server::port()).
  int io_threads = 0;  // 0: one per core.
  int blocking_threads = 16;
  Limits limits;
  std::string name = "http";  // In log lines.
};

struct ServerStats {
  uint64_t connections_open = 0;
  uint64_t connections_total = 0;
  uint64_t connections_rejected = 0;  // Past max_connections.
  uint64_t timeouts = 0;              // Closed for a head, body, idle or write timeout.
};

// Options of forward_get (below).
struct ForwardOptions {
  std::chrono::milliseconds connect_timeout{5'000};
  std::chrono::milliseconds read_timeout{30'000};
  std::vector<Header> headers;
  // Kept until the forward ends (its answer streamed, or its client gone): e.g. a
  // per-user stream slot.
  std::shared_ptr<void> hold;
};

class Server {
 public:
  Server(ServerOptions opts, Router router);
  ~Server();
  Server(const Server&) = delete;
  Server& operator=(const Server&) = delete;

  // Binds (SO_REUSEADDR, backlog SOMAXCONN) and starts the threads. Returns the port.
  Result<int> start();
  // Stops accepting, closes every connection, joins the threads. Idempotent.
  void stop();
  int port() const { return port_; }
  int io_threads() const;
  ServerStats stats() const;

  // Runs `fn` on an I/O thread after `delay` (unless the server stopped first).
  void after(std::chrono::milliseconds delay, std::function<void()> fn);
  // Runs `fn` on the blocking pool.
  void post_blocking(std::function<void()> fn);

  struct Impl;

 private:
  friend void forward_get(Server&, const std::string&, int, const std::string&, ForwardOptions, Reply);
  std::unique_ptr<Impl> impl_;
  int port_ = 0;
};

// Forwards a GET to http://host:port/target and streams the answer back through
// `reply` with the upstream's status and content type, never holding the whole body
// in memory. connect_timeout bounds the connection; read_timeout each read (a
// followed log waits long). An unreachable upstream answers 503 naming it; an
// upstream that fails mid-body ends the stream with a "[tessel: ...]" line.
void forward_get(Server& server, const std::string& host, int port, const std::string& target, ForwardOptions opts,
                 Reply reply);

}  // namespace tessel::http
