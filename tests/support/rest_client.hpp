#pragma once
// A small REST client for the scheduler's API in tests: a fresh connection per
// call, JSON bodies, and the reads tests keep making (a job, its state, nodes).

#include <chrono>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace tessel::testkit {

// Safe to share between threads: every call opens its own connection.
class RestClient {
 public:
  struct Timeouts {
    std::chrono::seconds connect{2};
    std::chrono::seconds read{10};
  };
  explicit RestClient(int port, std::string host = "127.0.0.1") : RestClient(port, Timeouts{}, std::move(host)) {}
  RestClient(int port, Timeouts t, std::string host = "127.0.0.1")
      : host_(std::move(host)), port_(port), timeouts_(t) {}
  void set_port(int port) { port_ = port; }
  int port() const { return port_; }
  // Sent as "Authorization: Bearer TOKEN" with every call ("" sends none).
  void set_token(std::string token) { token_ = std::move(token); }

  struct Reply {
    int status = 0;       // 0: no HTTP answer (connection failed).
    nlohmann::json body;  // Discarded (is_discarded()) when the body is not JSON.
    std::string text;     // The body as received.
  };
  Reply get(const std::string& path) const;
  Reply post(const std::string& path, const nlohmann::json& body) const;
  Reply post(const std::string& path) const;  // No body at all.
  Reply del(const std::string& path) const;
  Reply put(const std::string& path, const nlohmann::json& body) const;
  Reply patch(const std::string& path, const nlohmann::json& body) const;

  // GET /v1/jobs, every page.
  std::vector<nlohmann::json> all_jobs() const;
  // GET /v1/jobs/ID; nullopt unless 200.
  std::optional<nlohmann::json> job(const std::string& id) const;
  // Its "state" ("" when there is no such job or no answer).
  std::string job_state(const std::string& id) const;
  // GET /v1/nodes/NAME; nullopt unless 200.
  std::optional<nlohmann::json> node(const std::string& name) const;
  std::vector<nlohmann::json> nodes() const;

 private:
  std::string host_;
  int port_;
  Timeouts timeouts_;
  std::string token_;
};

}  // namespace tessel::testkit
