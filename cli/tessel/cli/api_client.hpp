#pragma once
// The CLI's HTTP client for the scheduler's REST API (a thin adapter over
// cpp-httplib). Every failure comes back as an Error whose message is one line:
//   server said no:   "devices: must be one of 0, 1, 2, 4, 8 (invalid_argument)"
//                     (code from the envelope's "code", field from its "field")
//   other HTTP error: "HTTP 502: <start of body>" (code from the status)
//   no connection:    "cannot reach http://127.0.0.1:7450: connection failed (Connection)"
//                     (code unavailable)
// error_code_of() is the one place an answer's code or status becomes an ErrorCode.
// Not thread-safe; one instance per command.

#include <chrono>
#include <functional>
#include <vector>
#include <memory>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "tessel/base/result.hpp"

namespace httplib {
class Client;
class Result;
}  // namespace httplib

namespace tessel::cli {

struct ServerUrl {
  std::string scheme;  // "http" or "https".
  std::string host;    // Without brackets for IPv6.
  int port = 0;
  // "scheme://host:port" as httplib wants it (IPv6 hosts in brackets).
  [[nodiscard]] std::string origin() const;
};

// Parses "http://host[:port][/]" (https too). Default ports 80/443. A path other
// than "/" , user info, query or fragment is an error.
Result<ServerUrl> parse_server_url(const std::string& url);

// True when this build's cpp-httplib can speak TLS (CPPHTTPLIB_OPENSSL_SUPPORT).
bool tls_supported();

// Percent-encodes one path segment or query value (RFC 3986 unreserved kept).
std::string url_encode(std::string_view s);

// The origin of a redirect's Location ("http://leader:7450/v1/jobs?x" gives
// http://leader:7450); an error when it is not an absolute http(s) URL.
Result<ServerUrl> redirect_origin(const std::string& location);

// Splits "URL[,URL...]" (spaces around commas allowed) and parses each.
Result<std::vector<ServerUrl>> parse_server_urls(const std::string& urls);

class ApiClient {
 public:
  // `urls` is one server URL or a comma-separated list of a scheduler's replicas.
  // A request that cannot connect to one (connection refused or timed out: nothing
  // was sent) goes to the next, and a 307 or 308 answer (a follower naming the
  // leader) is followed, up to kMaxRedirects times, with the same method and body.
  // Errors: a bad URL, or https in a build without TLS.
  static Result<std::unique_ptr<ApiClient>> create(const std::string& urls, std::string token,
                                                   std::chrono::seconds timeout);
  static constexpr int kMaxRedirects = 3;
  ~ApiClient();
  ApiClient(const ApiClient&) = delete;
  ApiClient& operator=(const ApiClient&) = delete;

  // A JSON request; 2xx answers are parsed (an empty body reads as null).
  Result<nlohmann::json> get(const std::string& path_and_query);
  Result<nlohmann::json> post(const std::string& path, const nlohmann::json& body);
  Result<nlohmann::json> put(const std::string& path, const nlohmann::json& body);
  Result<nlohmann::json> patch(const std::string& path, const nlohmann::json& body);
  Result<nlohmann::json> del(const std::string& path);

  // GET whose 2xx body is handed to `sink` piece by piece as it arrives; `sink`
  // returns false to stop. `bytes` counts what was handed over (also on error).
  // A read that stays silent for `idle_timeout` ends the request with an error.
  Status stream(const std::string& path_and_query, const std::function<bool(std::string_view)>& sink,
                std::chrono::seconds idle_timeout, uint64_t& bytes);

  // Retries a GET that failed in transport (connection refused, reset or lost; not a
  // timeout) up to `retries` more times, waiting `backoff`, 2 × `backoff`, ... before
  // each; `sleep` does the waiting (tests pass their own). POST, PUT and DELETE are
  // never retried: they may have been applied. The last error then ends in
  // "; tried N times". Default: no retries.
  using Sleep = std::function<void(std::chrono::milliseconds)>;
  void set_retry(int retries, std::chrono::milliseconds backoff, Sleep sleep);

  // True when the last request failed in transport (no connection, connection lost,
  // timeout) rather than with an HTTP answer; such a request may be retried.
  [[nodiscard]] bool last_failure_was_transport() const { return last_transport_failure_; }

 private:
  ApiClient(std::vector<ServerUrl> urls, std::string token, std::chrono::seconds timeout);
  Result<nlohmann::json> finish(int status, const std::string& body);
  Error transport_error(int httplib_error);
  // Sends with `send` to the current server, moving on to the next replica when
  // nothing could be sent and following redirects (see create()).
  // `idempotent`: a GET, which set_retry() may send again.
  Result<nlohmann::json> exchange(const std::function<httplib::Result(httplib::Client&)>& send, bool idempotent);
  void use(const ServerUrl& url);  // Points http_ at `url`.

  std::vector<ServerUrl> urls_;
  ServerUrl url_;  // Where requests go now.
  std::string token_;
  std::chrono::seconds timeout_;
  std::unique_ptr<httplib::Client> http_;
  bool last_transport_failure_ = false;
  int retries_ = 0;
  std::chrono::milliseconds backoff_{0};
  Sleep sleep_;
};

// The ErrorCode of an error answer: the envelope's `code` when it is one of the names
// of to_string(ErrorCode), else by HTTP status (tessel::error_code_of_http_status).
ErrorCode error_code_of(int status, std::string_view code_name);

// The Error of a non-2xx answer: its message is describe_error_body(), its code
// error_code_of(), its field the envelope's "field" (or empty).
Error error_of_response(int status, const std::string& body);

// The one-line reason from an API error body, or "HTTP <status>: ..." when the body
// is not the API's {"error":{...}} shape.
std::string describe_error_body(int status, const std::string& body);

}  // namespace tessel::cli
