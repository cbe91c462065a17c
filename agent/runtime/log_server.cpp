#include "tessel/agent/log_server.hpp"

#include <httplib.h>

#include <chrono>
#include <fstream>
#include <nlohmann/json.hpp>
#include <thread>

#include "tessel/api/http_listener.hpp"

namespace tessel::agent {

static void send_error(httplib::Response& res, int status, const std::string& code, const std::string& msg,
                       const std::string& field = "") {
  nlohmann::json e = {{"code", code}, {"message", msg}};
  if (!field.empty()) e["field"] = field;
  res.status = status;
  res.set_content(nlohmann::json{{"error", e}}.dump(), "application/json");
}

Result<std::pair<std::string, int>> parse_host_port(const std::string& s) {
  auto colon = s.rfind(':');
  if (colon == std::string::npos || colon == 0) return Error{"'" + s + "' is not HOST:PORT"};
  try {
    size_t used = 0;
    int port = std::stoi(s.substr(colon + 1), &used);
    if (used != s.size() - colon - 1 || port < 0 || port > 65535) throw std::out_of_range("port");
    return std::make_pair(s.substr(0, colon), port);
  } catch (const std::exception&) {
    return Error{"'" + s + "': port must be 0..65535"};
  }
}

static std::optional<int64_t> parse_nonneg(const std::string& s) {
  if (s.empty() || s.size() > 18) return std::nullopt;
  for (char c : s)
    if (c < '0' || c > '9') return std::nullopt;
  return std::stoll(s);
}

// Reads up to 64 KiB from `path` at `offset`; empty when nothing new.
static std::string read_at(const std::string& path, int64_t offset) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return {};
  in.seekg(offset);
  std::string buf(64 << 10, '\0');
  in.read(buf.data(), static_cast<std::streamsize>(buf.size()));
  buf.resize(static_cast<size_t>(in.gcount()));
  return buf;
}

LogServer::LogServer(const StateDir& dir, TaskManager& tasks, std::string token)
    : dir_(dir), tasks_(tasks), token_(std::move(token)), server_(std::make_unique<httplib::Server>()) {
  server_->Get(R"(/v1/tasks/([^/]+)/logs)", [this](const httplib::Request& req, httplib::Response& res) {
    if (!token_.empty() && req.get_header_value("Authorization") != "Bearer " + token_)
      return send_error(res, 401, "unauthenticated", "missing or wrong bearer token");
    const std::string id = req.matches[1];
    if (!is_safe_task_id(id)) return send_error(res, 400, "invalid_argument", "bad task id", "id");
    if (!tasks_.known(id)) return send_error(res, 404, "not_found", "no task " + id + " on this node");
    int rank = 0;
    if (req.has_param("task")) {
      auto v = parse_nonneg(req.get_param_value("task"));
      if (!v || *v > 4096) return send_error(res, 400, "invalid_argument", "task: must be a local rank", "task");
      rank = static_cast<int>(*v);
    }
    int64_t offset = 0;
    if (req.has_param("offset")) {
      auto v = parse_nonneg(req.get_param_value("offset"));
      if (!v) return send_error(res, 400, "invalid_argument", "offset: must be a byte offset >= 0", "offset");
      offset = *v;
    }
    std::string follow = req.has_param("follow") ? req.get_param_value("follow") : "false";
    if (follow != "true" && follow != "false")
      return send_error(res, 400, "invalid_argument", "follow: must be true or false", "follow");
    const std::string path = dir_.log_path(id, rank);
    if (follow == "false") {
      std::string all, chunk;
      while (!(chunk = read_at(path, offset + static_cast<int64_t>(all.size()))).empty()) all += chunk;
      res.set_content(all, "text/plain");
      return;
    }
    res.set_chunked_content_provider("text/plain", [this, id, path, offset](size_t sent, httplib::DataSink& sink) {
      for (;;) {
        if (!sink.is_writable()) return false;
        std::string chunk = read_at(path, offset + static_cast<int64_t>(sent));
        if (!chunk.empty()) return sink.write(chunk.data(), chunk.size());
        if (tasks_.finished(id)) {
          chunk = read_at(path, offset + static_cast<int64_t>(sent));
          if (!chunk.empty()) return sink.write(chunk.data(), chunk.size());
          sink.done();
          return true;
        }
        // Server side wait for the file to grow (not a test sleep).
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
      }
    });
  });
}

LogServer::~LogServer() { stop(); }

Result<int> LogServer::start(const std::string& listen) {
  auto hp = parse_host_port(listen);
  if (!hp) return hp.error().wrap("--listen");
  int port = hp->second;
  api::ListenerOptions listener(*server_);  // No SO_REUSEPORT: a second agent cannot share the port.
  if (port == 0) {
    port = server_->bind_to_any_port(hp->first);
    if (port < 0) return Error{"--listen " + listen + ": cannot bind"};
  } else if (!server_->bind_to_port(hp->first, port)) {
    return Error{"--listen " + listen + ": cannot bind"};
  }
  thread_ = std::make_unique<std::thread>([this] { server_->listen_after_bind(); });
  return port;
}

void LogServer::stop() {
  if (!thread_) return;
  server_->stop();
  thread_->join();
  thread_.reset();
}

}  // namespace tessel::agent
