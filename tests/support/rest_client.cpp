// testkit::RestClient over cpp-httplib.
#include "rest_client.hpp"

#include <httplib.h>

namespace tessel::testkit {

using nlohmann::json;

namespace {
RestClient::Reply to_reply(const httplib::Result& r) {
  RestClient::Reply out;
  if (!r) return out;
  out.status = r->status;
  out.text = r->body;
  out.body = json::parse(r->body, nullptr, false);
  return out;
}
}  // namespace

namespace {
// Calls `f` with a fresh client to host:port, with the bearer `token` unless empty.
template <class F>
RestClient::Reply call(const std::string& host, int port, const RestClient::Timeouts& t, const std::string& token,
                       F f) {
  httplib::Client c(host, port);
  c.set_connection_timeout(static_cast<time_t>(t.connect.count()), 0);
  c.set_read_timeout(static_cast<time_t>(t.read.count()), 0);
  if (!token.empty()) c.set_bearer_token_auth(token);
  return to_reply(f(c));
}
}  // namespace

RestClient::Reply RestClient::get(const std::string& path) const {
  return call(host_, port_, timeouts_, token_, [&](httplib::Client& c) { return c.Get(path.c_str()); });
}

RestClient::Reply RestClient::post(const std::string& path, const json& body) const {
  return call(host_, port_, timeouts_, token_,
              [&](httplib::Client& c) { return c.Post(path.c_str(), body.dump(), "application/json"); });
}

RestClient::Reply RestClient::post(const std::string& path) const {
  return call(host_, port_, timeouts_, token_, [&](httplib::Client& c) { return c.Post(path.c_str()); });
}

RestClient::Reply RestClient::put(const std::string& path, const json& body) const {
  return call(host_, port_, timeouts_, token_,
              [&](httplib::Client& c) { return c.Put(path.c_str(), body.dump(), "application/json"); });
}

RestClient::Reply RestClient::patch(const std::string& path, const json& body) const {
  return call(host_, port_, timeouts_, token_,
              [&](httplib::Client& c) { return c.Patch(path.c_str(), body.dump(), "application/json"); });
}

RestClient::Reply RestClient::del(const std::string& path) const {
  return call(host_, port_, timeouts_, token_, [&](httplib::Client& c) { return c.Delete(path.c_str()); });
}

std::vector<json> RestClient::all_jobs() const {
  std::vector<json> out;
  std::string after;
  for (;;) {
    auto r = get("/v1/jobs?limit=1000" + (after.empty() ? "" : "&after=" + after));
    if (r.status != 200 || !r.body.is_object()) return out;
    for (auto& j : r.body["jobs"]) out.push_back(j);
    if (!r.body.contains("next")) return out;
    after = r.body["next"].get<std::string>();
  }
}

std::optional<json> RestClient::job(const std::string& id) const {
  auto r = get("/v1/jobs/" + id);
  if (r.status != 200) return std::nullopt;
  return r.body;
}

std::string RestClient::job_state(const std::string& id) const {
  auto j = job(id);
  return j && j->is_object() ? j->value("state", "") : "";
}

std::optional<json> RestClient::node(const std::string& name) const {
  auto r = get("/v1/nodes/" + name);
  if (r.status != 200) return std::nullopt;
  return r.body;
}

std::vector<json> RestClient::nodes() const {
  auto r = get("/v1/nodes");
  std::vector<json> out;
  if (r.status != 200) return out;
  const json& arr = r.body.is_array() ? r.body : r.body.value("nodes", json::array());
  for (const auto& n : arr) out.push_back(n);
  return out;
}

}  // namespace tessel::testkit
