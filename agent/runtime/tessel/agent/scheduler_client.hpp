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

#include "tessel/api/agent_protocol.hpp"

#include "tessel/http/client.hpp"

namespace tessel::agent {

// The outcome of one call: a value, or why not. status 0 = no HTTP answer
// (unreachable, timeout, bad answer body); 404 = the scheduler does not know us.
template <class T>
struct Reply {
  std::optional<T> value;
  int status = 0;
  std::string error;
  bool ok() const { return value.has_value(); }
  bool not_found() const { return status == 404; }
};

class SchedulerApi {
 public:
  virtual ~SchedulerApi() = default;
  virtual Reply<api::RegisterResponse> register_node(const api::RegisterRequest& req) = 0;
  virtual Reply<api::HeartbeatResponse> heartbeat(const api::HeartbeatRequest& req) = 0;
  virtual Reply<api::ReportResponse> report(const api::ReportRequest& req) = 0;
  virtual Reply<api::DesiredState> desired_state(const std::string& node, int64_t version, int wait_s) = 0;
  virtual void cancel() {}
};

class SchedulerClient final : public SchedulerApi {
 public:
  // `url` is "http[s]://host[:port]" (else every call fails naming it); `token` may be
  // empty (no Authorization header).
  // keep_alive: hold the connection open between requests. Right for the long poll (it
  // asks again at once); wrong for heartbeats and reports (one every few seconds), whose
  // idle connection would hold an open file and one of --http-max-connections on the
  // scheduler for its idle timeout (--http-idle-timeout, 60 s) each time.
  SchedulerClient(http::ClientLoop& loop, const std::string& url, const std::string& token, bool keep_alive = true);
  ~SchedulerClient() override;
  Reply<api::RegisterResponse> register_node(const api::RegisterRequest& req) override;
  Reply<api::HeartbeatResponse> heartbeat(const api::HeartbeatRequest& req) override;
  Reply<api::ReportResponse> report(const api::ReportRequest& req) override;
  Reply<api::DesiredState> desired_state(const std::string& node, int64_t version, int wait_s) override;
  // Fails the call in flight and every later one (the agent is stopping).
  void cancel() override;

 private:
  template <class T, class Parse>
  Reply<T> call(const char* method, const std::string& target, std::string body, std::chrono::milliseconds timeout,
                Parse parse);

  std::optional<Error> bad_url_;
  std::unique_ptr<http::Client> http_;
};

// First non-empty line of a token file, trimmed. Errors: unreadable, empty.
Result<std::string> read_token_file(const std::string& path);

}  // namespace tessel::agent
