#include "tessel/agent/log_server.hpp"

#include <chrono>
#include <fstream>

#include "tessel/base/host_port.hpp"
#include "tessel/http/server.hpp"

namespace tessel::agent {

namespace {

constexpr size_t kChunkBytes = 64 << 10;
// How often a followed log that stopped growing is looked at again (a timer, not a thread).
constexpr std::chrono::milliseconds kFollowPoll{100};

std::optional<int64_t> parse_nonneg(const std::string& s) {
  if (s.empty() || s.size() > 18) return std::nullopt;
  for (char c : s)
    if (c < '0' || c > '9') return std::nullopt;
  return std::stoll(s);
}

// Reads up to kChunkBytes from `path` at `offset`; empty when nothing new.
std::string read_at(const std::string& path, int64_t offset) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return {};
  in.seekg(offset);
  std::string buf(kChunkBytes, '\0');
  in.read(buf.data(), static_cast<std::streamsize>(buf.size()));
  buf.resize(static_cast<size_t>(in.gcount()));
  return buf;
}

// Sends one task log piece by piece: a chunk is read only once the previous one
// was written, so a slow reader holds 64 KiB, not the log. Following, it looks
// again every kFollowPoll until the task has ended and every byte is sent.
class LogPump : public std::enable_shared_from_this<LogPump> {
 public:
  LogPump(http::Server& server, TaskManager& tasks, std::string id, std::string path, int64_t offset, bool follow,
          std::shared_ptr<http::BodyStream> out)
      : server_(server),
        tasks_(tasks),
        id_(std::move(id)),
        path_(std::move(path)),
        offset_(offset),
        follow_(follow),
        out_(std::move(out)) {}

  void next() {
    if (!out_->open()) return;  // The scheduler (its client) left: stop following.
    std::string chunk = read_at(path_, offset_);
    if (chunk.empty()) {
      // Whether the task ended is asked before the last read, so no byte written
      // in between is lost.
      if (!follow_ || ended_) return out_->finish();
      ended_ = tasks_.finished(id_);
      if (ended_) return next();
      server_.after(kFollowPoll, [self = shared_from_this()] { self->next(); });
      return;
    }
    offset_ += static_cast<int64_t>(chunk.size());
    out_->write(std::move(chunk), [self = shared_from_this()](bool ok) {
      if (ok) self->next();
    });
  }

 private:
  http::Server& server_;
  TaskManager& tasks_;
  const std::string id_, path_;
  int64_t offset_;
  const bool follow_;
  bool ended_ = false;
  std::shared_ptr<http::BodyStream> out_;
};

}  // namespace

LogServer::LogServer(const StateDir& dir, TaskManager& tasks) : dir_(dir), tasks_(tasks) {}

void LogServer::set_scheduler_key(std::string key) {
  MutexLock lk(mu_);
  scheduler_key_ = std::move(key);
}

Status LogServer::check_credential(const http::Request& req) const {
  MutexLock lk(mu_);
  if (scheduler_key_.empty()) return Error::unavailable("not registered with a scheduler yet");
  const std::string expected = "Bearer " + scheduler_key_;
  const std::string got = req.header("Authorization");
  // Compares every byte whatever the first difference, so timing tells nothing of the key.
  unsigned char diff = got.size() == expected.size() ? 0 : 1;
  for (size_t i = 0; i < expected.size(); ++i)
    diff |= static_cast<unsigned char>(expected[i] ^ (i < got.size() ? got[i] : 0));
  if (diff != 0) return Error::unauthenticated("missing or wrong scheduler credential");
  return ok_status();
}

LogServer::~LogServer() { stop(); }

void LogServer::serve_log(http::Request& req, const http::Reply& reply) {
  if (auto ok = check_credential(req); !ok) return reply(ok.error());
  const std::string id = req.captures[0];
  if (!is_safe_task_id(id)) return reply(Error::invalid("bad task id", "id"));
  if (!tasks_.known(id)) return reply(Error::not_found("no task " + id + " on this node"));
  int rank = 0;
  if (req.has_param("task")) {
    auto v = parse_nonneg(req.param("task"));
    if (!v || *v > 4096) return reply(Error::invalid("task: must be a local rank", "task"));
    rank = static_cast<int>(*v);
  }
  int64_t offset = 0;
  if (req.has_param("offset")) {
    auto v = parse_nonneg(req.param("offset"));
    if (!v) return reply(Error::invalid("offset: must be a byte offset >= 0", "offset"));
    offset = *v;
  }
  const std::string follow = req.has_param("follow") ? req.param("follow") : "false";
  if (follow != "true" && follow != "false") return reply(Error::invalid("follow: must be true or false", "follow"));
  http::Response res;
  res.content_type = "text/plain";
  res.stream = [this, id, path = dir_.log_path(id, rank), offset, follow = follow == "true"](auto out) {
    std::make_shared<LogPump>(*server_, tasks_, id, path, offset, follow, std::move(out))->next();
  };
  reply(std::move(res));
}

Result<int> LogServer::start(const std::string& listen, size_t max_connections) {
  auto hp = parse_host_port(listen);
  if (!hp) return hp.error().wrap("--listen");
  http::Router router;
  router.add("GET", "/v1/tasks/{id}/logs",
             [this](http::Request& req, const http::Reply& reply) { serve_log(req, reply); });
  http::ServerOptions opts;
  opts.host = hp->host;
  opts.port = hp->port;
  opts.io_threads = 1;  // Log reads are small and many followers share it.
  opts.blocking_threads = 1;
  // Past the cap a reader gets a 503 at once (tessel-agent fits it to the open-file limit).
  opts.limits.max_connections = max_connections;
  opts.name = "agent log server";
  server_ = std::make_unique<http::Server>(opts, std::move(router));
  auto port = server_->start();
  if (!port) return port.error().wrap("--listen " + listen);
  return *port;
}

void LogServer::stop() {
  if (server_) server_->stop();
}

}  // namespace tessel::agent
