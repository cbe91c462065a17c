#include "fake_api_server.hpp"

#include <chrono>
#include <stdexcept>

namespace tessel::cli::testing {

FakeApiServer::FakeApiServer(int port) {
  auto h = [this](const httplib::Request& req, httplib::Response& res) { dispatch(req, res); };
  server_.Get(".*", h);
  server_.Post(".*", h);
  server_.Put(".*", h);
  server_.Patch(".*", h);
  server_.Delete(".*", h);
  port_ = port == 0 ? server_.bind_to_any_port("127.0.0.1") : (server_.bind_to_port("127.0.0.1", port) ? port : -1);
  if (port_ <= 0) throw std::runtime_error("fake API server: cannot bind 127.0.0.1:" + std::to_string(port));
  thread_ = std::thread([this] { server_.listen_after_bind(); });
}

FakeApiServer::~FakeApiServer() {
  // stop() is a no-op until the accept loop runs; wait for it (bounded) first.
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (!server_.is_running() && std::chrono::steady_clock::now() < deadline) std::this_thread::yield();
  server_.stop();
  thread_.join();
}

void FakeApiServer::on(const std::string& method, const std::string& path, int status, const std::string& body) {
  on(method, path, [status, body](const httplib::Request&, httplib::Response& res) {
    res.status = status;
    res.set_content(body, "application/json");
  });
}

void FakeApiServer::on(const std::string& method, const std::string& path, Handler h) {
  std::lock_guard<std::mutex> l(mu_);
  routes_[method + " " + path] = std::move(h);
}

std::vector<RecordedRequest> FakeApiServer::requests() const {
  std::lock_guard<std::mutex> l(mu_);
  return requests_;
}

void FakeApiServer::dispatch(const httplib::Request& req, httplib::Response& res) {
  Handler h;
  {
    std::lock_guard<std::mutex> l(mu_);
    RecordedRequest r{req.method, req.path, {}, req.get_header_value("Authorization"), req.body};
    for (const auto& [k, v] : req.params) r.params.emplace(k, v);
    requests_.push_back(std::move(r));
    auto it = routes_.find(req.method + " " + req.path);
    if (it != routes_.end()) h = it->second;
  }
  if (!h) {
    res.status = 404;
    res.set_content(R"({"error":{"code":"not_found","message":"no route )" + req.method + " " + req.path + "\"}}",
                    "application/json");
    return;
  }
  h(req, res);
}

}  // namespace tessel::cli::testing
