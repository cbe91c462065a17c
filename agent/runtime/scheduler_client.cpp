#include "tessel/agent/scheduler_client.hpp"

#include <nlohmann/json.hpp>
#include <sstream>

#include "tessel/agent/durable_file.hpp"
#include "tessel/base/http_status.hpp"

namespace tessel::agent {

using nlohmann::json;

SchedulerClient::SchedulerClient(http::ClientLoop& loop, const std::string& url, const std::string& token,
                                 bool keep_alive)
    : loop_(loop) {
  auto urls = http::parse_http_urls(url);
  if (!urls) {
    bad_url_ = urls.error();
    return;
  }
  urls_ = std::move(*urls);
  opts_.connect_timeout = std::chrono::seconds(2);
  opts_.keep_alive = keep_alive;
  if (!token.empty()) opts_.headers.push_back({"Authorization", "Bearer " + token});
  use(urls_.front());
  MutexLock lk(mu_);
  next_ = 1 % urls_.size();
}

SchedulerClient::~SchedulerClient() = default;

void SchedulerClient::cancel() {
  MutexLock lk(mu_);
  cancelled_ = true;
  if (http_) http_->cancel();
}

std::shared_ptr<http::Client> SchedulerClient::current() {
  MutexLock lk(mu_);
  return cancelled_ ? nullptr : http_;
}

void SchedulerClient::use(const http::HttpUrl& url) {
  http::ClientOptions o = opts_;
  o.tls = url.tls;
  auto client = std::make_shared<http::Client>(loop_, url.host, url.port, std::move(o));
  MutexLock lk(mu_);
  if (!cancelled_) http_ = std::move(client);
}

// A string member of a JSON object, or "" (never throws, whatever the shape).
static std::string string_member(const json& j, const char* name) {
  if (!j.is_object()) return "";
  auto it = j.find(name);
  return it != j.end() && it->is_string() ? it->get<std::string>() : "";
}

Error error_of_response(int status, const std::string& body) {
  const json answer = json::parse(body, nullptr, false);
  const json* envelope = nullptr;
  if (answer.is_object())
    if (auto it = answer.find("error"); it != answer.end() && it->is_object()) envelope = &*it;
  const std::string msg = envelope ? string_member(*envelope, "message") : body.substr(0, 200);
  return Error{"HTTP " + std::to_string(status) + ": " + msg, error_code_of_http_status(status),
               envelope ? string_member(*envelope, "field") : ""};
}

template <class T, class Parse>
Result<T> SchedulerClient::call(const char* method, const std::string& target, const std::string& body,
                                std::chrono::milliseconds timeout, Parse parse) {
  if (bad_url_) return *bad_url_;
  Result<http::ClientResponse> res = Error::unavailable("no call made");
  for (int redirects = 0;; ++redirects) {
    auto client = current();
    if (!client) return Error::unavailable("no answer: cancelled");
    res = client->call(method, target, body, timeout);
    if (!res) {
      if (urls_.size() > 1) {  // The next call tries the next replica.
        size_t next = 0;
        {
          MutexLock lk(mu_);
          next = next_;
          next_ = (next_ + 1) % urls_.size();
        }
        use(urls_[next]);
      }
      return res.error().wrap("no answer");
    }
    if ((res->status == 307 || res->status == 308) && !res->location.empty() && redirects < kMaxRedirects) {
      auto leader = http::parse_url_origin(res->location);
      if (!leader) return leader.error();
      use(*leader);
      continue;
    }
    break;
  }
  if (res->status / 100 != 2) return error_of_response(res->status, res->body);
  const json answer = json::parse(res->body, nullptr, false);
  if (answer.is_discarded()) return Error::internal("answer is not JSON");
  auto v = parse(answer);
  if (!v) return Error::internal(v.error().message);
  return std::move(*v);
}

// The scheduler commits registrations, heartbeats and reports (a report also frees
// the cards of ended jobs) before it answers: a few ms usually, more on a busy
// cluster or a slow disk; 10 s is a scheduler in trouble.
constexpr std::chrono::seconds kCallTimeout{10};

Result<api::RegisterResponse> SchedulerClient::register_node(const api::RegisterRequest& req) {
  return call<api::RegisterResponse>("POST", "/v1/agent/register", api::to_json(req).dump(), kCallTimeout,
                                     api::register_response_from_json);
}

Result<api::HeartbeatResponse> SchedulerClient::heartbeat(const api::HeartbeatRequest& req) {
  return call<api::HeartbeatResponse>("POST", "/v1/agent/heartbeat", api::to_json(req).dump(), kCallTimeout,
                                      api::heartbeat_response_from_json);
}

Result<api::ReportResponse> SchedulerClient::report(const api::ReportRequest& req) {
  return call<api::ReportResponse>("POST", "/v1/agent/report", api::to_json(req).dump(), kCallTimeout,
                                   api::report_response_from_json);
}

Result<api::DesiredState> SchedulerClient::desired_state(const std::string& node, int64_t version, int wait_s) {
  // The long poll holds its answer up to wait_s; the node name is a path segment.
  std::string path = "/v1/agent/nodes/" + node + "/assignments?version=" + std::to_string(version) +
                     "&wait_s=" + std::to_string(wait_s);
  return call<api::DesiredState>("GET", path, "", std::chrono::seconds(wait_s) + kCallTimeout,
                                 api::desired_state_from_json);
}

Result<std::string> read_token_file(const std::string& path) {
  auto text = read_small_file(path, 64 << 10);
  if (!text) return text.error().wrap("reading token file");
  std::istringstream in(*text);
  std::string line;
  while (std::getline(in, line)) {
    auto b = line.find_first_not_of(" \t\r");
    if (b == std::string::npos) continue;
    auto e = line.find_last_not_of(" \t\r");
    return line.substr(b, e - b + 1);
  }
  return Error{"reading token file: " + path + " holds no token"};
}

}  // namespace tessel::agent
