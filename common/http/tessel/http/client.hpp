#pragma once
// tessel::http::Client: the HTTP/1.1 client of the agent's scheduler connections, on
// Boost.Asio and Beast. Every Client bound to one ClientLoop is served by that loop's
// one I/O thread: a connection costs a socket and a small object, never a thread.
//
// A call is asynchronous (call_async: the callback runs on the loop's thread, so it
// must not block) or blocking for its caller (call: waits for the answer; never from
// the loop's thread). One call at a time per Client; a keep-alive Client reuses its
// connection and, when the server closed it while idle, reconnects and sends again
// once. https URLs speak TLS (OpenSSL through Boost.Asio): the server's certificate
// must verify against the system's CAs (or ClientOptions::ca_file) and name the host.
// Beast stays in client.cpp: this header names no Boost type.

#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "tessel/base/result.hpp"
#include "tessel/http/server.hpp"

namespace tessel::http {

// One I/O thread and the io_context it runs; Clients bound to it must be destroyed
// first (their calls in flight end as cancelled when it stops).
class ClientLoop {
 public:
  ClientLoop();
  ~ClientLoop();
  ClientLoop(const ClientLoop&) = delete;
  ClientLoop& operator=(const ClientLoop&) = delete;

  struct Impl;

 private:
  friend class Client;
  std::unique_ptr<Impl> impl_;
};

struct ClientOptions {
  bool tls = false;     // https: TLS with certificate and host name verification.
  std::string ca_file;  // PEM CAs to trust instead of the system's (tls only).
  std::chrono::milliseconds connect_timeout{2'000};
  bool keep_alive = true;       // Hold the connection open between calls.
  std::vector<Header> headers;  // Sent with every request (e.g. Authorization).
  size_t max_body_bytes = 16 << 20;
};

struct ClientResponse {
  int status = 0;
  std::string content_type;
  std::string location;  // The Location header (of a redirect), or "".
  std::string body;
};

struct HttpUrl {
  bool tls = false;  // https
  std::string host;  // IPv6 without brackets.
  int port = 0;      // Default 80 (http) or 443 (https).
};

// "http://host[:port]" or "https://host[:port]" (an optional trailing '/'). Errors
// name the URL (field "url"); paths, queries and user info are refused.
Result<HttpUrl> parse_http_url(const std::string& url);

// "URL[,URL...]" (spaces around commas allowed): the replicas of one scheduler, each
// as parse_http_url() takes it.
Result<std::vector<HttpUrl>> parse_http_urls(const std::string& urls);

// The scheme, host and port of an absolute http(s) URL with any path, query or
// fragment (a redirect's Location); errors name it (field "location").
Result<HttpUrl> parse_url_origin(const std::string& url);

class Client {
 public:
  using Callback = std::function<void(Result<ClientResponse>)>;

  Client(ClientLoop& loop, std::string host, int port, ClientOptions opts = {});
  ~Client();  // Cancels a call in flight.
  Client(const Client&) = delete;
  Client& operator=(const Client&) = delete;

  // Sends `method target` with `body` (JSON when not empty) and answers with the
  // response of any status, or an `unavailable` Error (no connection, timeout,
  // malformed answer, cancelled). `timeout` bounds the whole call.
  void call_async(std::string method, std::string target, std::string body, std::chrono::milliseconds timeout,
                  Callback done);
  Result<ClientResponse> call(std::string method, std::string target, std::string body,
                              std::chrono::milliseconds timeout);

  // Fails the call in flight and every later one at once (shutting down). Any thread.
  void cancel();

  struct Impl;

 private:
  std::shared_ptr<Impl> impl_;
};

}  // namespace tessel::http
