#pragma once
// An in-test stand-in for the scheduler's REST API: an httplib::Server on
// 127.0.0.1, port 0, answering canned responses and recording every request.
// Routes may be added while it runs; all members are thread-safe (one mutex).

#include <functional>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include <httplib.h>

namespace tessel::cli::testing {

struct RecordedRequest {
  std::string method;
  std::string path;
  std::multimap<std::string, std::string> params;
  std::string authorization;  // The Authorization header, "" when absent.
  std::string body;
  std::string param(const std::string& key) const {
    auto it = params.find(key);
    return it == params.end() ? "" : it->second;
  }
};

class FakeApiServer {
 public:
  using Handler = std::function<void(const httplib::Request&, httplib::Response&)>;

  // Listens on `port` (0: one the kernel picks).
  explicit FakeApiServer(int port = 0);
  ~FakeApiServer();
  FakeApiServer(const FakeApiServer&) = delete;
  FakeApiServer& operator=(const FakeApiServer&) = delete;

  // Answers `method path` (exact path, query ignored) with `status` and a JSON body.
  void on(const std::string& method, const std::string& path, int status, const std::string& json_body);
  // Answers with a handler (runs on the server's thread).
  void on(const std::string& method, const std::string& path, Handler h);

  [[nodiscard]] std::string url() const { return "http://127.0.0.1:" + std::to_string(port_); }
  [[nodiscard]] int port() const { return port_; }
  [[nodiscard]] std::vector<RecordedRequest> requests() const;

 private:
  void dispatch(const httplib::Request& req, httplib::Response& res);

  httplib::Server server_;
  int port_ = 0;
  std::thread thread_;
  mutable std::mutex mu_;
  std::map<std::string, Handler> routes_;  // Guarded by mu_. Key "METHOD path".
  std::vector<RecordedRequest> requests_;  // Guarded by mu_.
};

}  // namespace tessel::cli::testing
