#pragma once
// The agent's side of api/tessel/api/agent_protocol.hpp over HTTP (tessel::http::Client
// on Boost.Asio: the agent's scheduler connections share one I/O thread).
// SchedulerApi is the seam tests replace; SchedulerClient is the real one.
// One call at a time per SchedulerClient (each of the agent's loops has its own);
// cancel() may be called from any thread.

#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "tessel/api/agent_protocol.hpp"
#include "tessel/base/result.hpp"

#include "tessel/http/client.hpp"
#include "tessel/sync/mutex.hpp"

namespace tessel::agent {

// Every call answers a tessel::Result: the value, or an Error whose code says why not.
//   no HTTP answer (unreachable, timeout, cancelled): the http::Client's code,
//     `unavailable` ("no answer: ...");
//   an HTTP error status: tessel::error_code_of_http_status(), so 404 (`not_found`) is a
//     scheduler that does not know this node (or lacks the route);
//   a 2xx answer whose body does not parse: `internal`.

// The Error of a non-2xx answer: "HTTP <status>: <message>", the message from the
// API's {"error":{"message",...}} envelope (and its field), else the body's first
// 200 bytes; the code from tessel::error_code_of_http_status().
Error error_of_response(int status, const std::string& body);

class SchedulerApi {
 public:
  virtual ~SchedulerApi() = default;
  virtual Result<api::RegisterResponse> register_node(const api::RegisterRequest& req) = 0;
  virtual Result<api::HeartbeatResponse> heartbeat(const api::HeartbeatRequest& req) = 0;
  virtual Result<api::ReportResponse> report(const api::ReportRequest& req) = 0;
  virtual Result<api::DesiredState> desired_state(const std::string& node, int64_t version, int wait_s) = 0;
  virtual void cancel() {}
};

class SchedulerClient final : public SchedulerApi {
 public:
  // `url` is "http[s]://host[:port]", or the replicas of one scheduler separated by
  // commas (else every call fails naming it); `token` may be empty (no Authorization
  // header). A call answered 307/308 (a follower naming the leader) is sent again to
  // the Location's origin, at most kMaxRedirects times, and later calls go there too.
  // A call that gets no answer fails, and the next call goes to the next replica of
  // the list: the agent's loops retry every call, and each is safe to repeat.
  // keep_alive: hold the connection open between requests. Right for the long poll (it
  // asks again at once) and heartbeats (one every 1-5 s, inside the scheduler's idle
  // timeout, --http-idle-timeout, 60 s: a handshake saved each time, for an open file
  // and one of --http-max-connections on the scheduler); wrong for reports (one per
  // task change), whose idle connection would hold both for the idle timeout. A kept
  // connection the scheduler closed while idle is reopened by the call that finds it so.
  SchedulerClient(http::ClientLoop& loop, const std::string& url, const std::string& token, bool keep_alive = true);
  ~SchedulerClient() override;
  Result<api::RegisterResponse> register_node(const api::RegisterRequest& req) override;
  Result<api::HeartbeatResponse> heartbeat(const api::HeartbeatRequest& req) override;
  Result<api::ReportResponse> report(const api::ReportRequest& req) override;
  Result<api::DesiredState> desired_state(const std::string& node, int64_t version, int wait_s) override;
  // Fails the call in flight and every later one (the agent is stopping).
  void cancel() override;

 private:
  static constexpr int kMaxRedirects = 3;

  template <class T, class Parse>
  Result<T> call(const char* method, const std::string& target, const std::string& body,
                 std::chrono::milliseconds timeout, Parse parse);
  // The client of the server calls go to now (null after cancel()).
  std::shared_ptr<http::Client> current() EXCLUDES(mu_);
  // Points later calls at `url`, unless cancel() came first.
  void use(const http::HttpUrl& url) EXCLUDES(mu_);

  http::ClientLoop& loop_;
  http::ClientOptions opts_;
  std::optional<Error> bad_url_;
  std::vector<http::HttpUrl> urls_;
  Mutex mu_;
  size_t next_ GUARDED_BY(mu_) = 0;  // Index in urls_ of the replica after the current one.
  bool cancelled_ GUARDED_BY(mu_) = false;
  std::shared_ptr<http::Client> http_ GUARDED_BY(mu_);
};

// First non-empty line of a token file, trimmed. Errors: unreadable, empty.
Result<std::string> read_token_file(const std::string& path);

}  // namespace tessel::agent
