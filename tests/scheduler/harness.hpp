#pragma once
// In-process scheduler for tests: in-memory SQLite behind a FaultyStore, a
// FakeClock, the Service on 127.0.0.1:0 with the liveness ticker off, and an
// HTTP client. Helpers build inventories and act as a fake agent over raw HTTP.

#include <chrono>
#include <future>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include <gtest/gtest.h>
#include <httplib.h>
#include <nlohmann/json.hpp>

#include "eventually.hpp"
#include "tessel/scheduler/service.hpp"
#include "tessel/scheduler/store.hpp"
#include "tessel/scheduler/tokens.hpp"

namespace tessel::scheduler::testing {

using nlohmann::json;

using testkit::eventually;

// An 8-card Gaudi 2 node inventory (module ids = indices 0..7).
inline json gaudi_inventory(int cards = 8, const std::string& model = "HL-225") {
  json devs = json::array();
  for (int i = 0; i < cards; ++i)
    devs.push_back({{"index", i},
                    {"module_id", i},
                    {"model", model},
                    {"memory_total_mib", 98304},
                    {"memory_used_mib", 512},
                    {"utilization_pct", 10},
                    {"temperature_c", 40},
                    {"power_w", 200},
                    {"healthy", true}});
  return {{"vendor", "habana"}, {"driver_version", "1.18.0"}, {"devices", devs}};
}

// A tokens file's table from its text ("TOKEN ROLE NAME" lines); a test whose text
// does not parse fails.
inline TokenTable tokens_from(std::string_view text) {
  auto t = parse_tokens(text);
  EXPECT_TRUE(t.ok()) << t.error().message;
  return t.ok() ? *t : TokenTable{};
}

// The service as tests run it: an ephemeral port, the liveness ticker off (tests
// call check_liveness() after moving their FakeClock).
inline ServiceOptions test_service_options() {
  ServiceOptions opts;
  opts.port = 0;
  opts.liveness_tick_ms = 0;
  opts.history_tick_ms = 0;
  return opts;
}

struct Harness {
  // `epoch`: the leader epoch the service answers agents with (ServiceOptions::epoch).
  explicit Harness(std::optional<TokenTable> tokens = std::nullopt, StateOptions so = {}, int64_t epoch = 0) {
    auto s = open_sqlite_store(":memory:");
    EXPECT_TRUE(s.ok());
    store = std::make_unique<FaultyStore>(std::move(*s));
    ServiceOptions opts = test_service_options();
    opts.state = so;
    opts.epoch = epoch;
    service = std::make_unique<Service>(*store, clock, std::move(tokens), opts);
    auto st = service->start();
    EXPECT_TRUE(st.ok()) << (st.ok() ? "" : st.error().message);
    client = std::make_unique<httplib::Client>("127.0.0.1", service->port());
    client->set_read_timeout(30);
  }

  httplib::Headers auth(const std::string& token) const {
    if (token.empty()) return {};
    return {{"Authorization", "Bearer " + token}};
  }
  httplib::Result post(const std::string& path, const json& body, const std::string& token = "") {
    return client->Post(path.c_str(), auth(token), body.dump(), "application/json");
  }
  httplib::Result get(const std::string& path, const std::string& token = "") {
    return client->Get(path.c_str(), auth(token));
  }
  static json body(const httplib::Result& r) { return json::parse(r->body, nullptr, false); }

  json submit(const json& spec, const std::string& token = "") {
    auto r = post("/v1/jobs", spec, token);
    EXPECT_TRUE(r);
    EXPECT_EQ(r->status, 201) << r->body;
    return body(r);
  }
  std::string job_state(const std::string& id) { return body(get("/v1/jobs/" + id))["state"]; }

  void register_node(const std::string& name, const json& tasks = json::array(), const std::string& token = "") {
    auto r = post("/v1/agent/register",
                  {{"node", name},
                   {"address", "10.0.0." + std::to_string(name.size())},
                   {"agent_port", 0},
                   {"inventory", gaudi_inventory()},
                   {"tasks", tasks}},
                  token);
    ASSERT_TRUE(r);
    ASSERT_EQ(r->status, 200) << r->body;
  }
  httplib::Result heartbeat(const std::string& name, const json& tasks, const std::string& token = "") {
    return post("/v1/agent/heartbeat", {{"node", name}, {"inventory", gaudi_inventory()}, {"tasks", tasks}}, token);
  }
  // Long poll; returns the DesiredState JSON.
  json desired(const std::string& node, int64_t version, int wait_s) {
    auto r = get("/v1/agent/nodes/" + node + "/assignments?version=" + std::to_string(version) +
                 "&wait_s=" + std::to_string(wait_s));
    EXPECT_TRUE(r);
    if (!r) return json();
    EXPECT_EQ(r->status, 200) << r->body;
    return body(r);
  }
  // A long poll (wait_s 30) on its own connection and thread; the future holds the DesiredState JSON.
  std::future<json> park_poll(const std::string& node, int64_t version, const std::string& token = "") {
    const int port = service->port();
    return std::async(std::launch::async, [port, node, version, headers = auth(token)] {
      httplib::Client c("127.0.0.1", port);
      c.set_read_timeout(60);
      auto r =
          c.Get(("/v1/agent/nodes/" + node + "/assignments?version=" + std::to_string(version) + "&wait_s=30").c_str(),
                headers);
      return r ? json::parse(r->body, nullptr, false) : json();
    });
  }
  // The scheduler's gauge of parked long polls (GET /metrics).
  int long_polls_parked(const std::string& token = "") {
    auto r = get("/metrics", token);
    if (!r) return -1;
    const std::string key = "\ntessel_agent_long_polls ";
    const size_t at = r->body.find(key);
    return at == std::string::npos ? -1 : std::atoi(r->body.c_str() + at + key.size());
  }
  // Placements are made by the scheduler thread; wait for the job's state.
  bool wait_state(const std::string& id, const std::string& state) {
    return eventually([&] { return job_state(id) == state; });
  }

  FakeClock clock;
  std::unique_ptr<FaultyStore> store;
  std::unique_ptr<Service> service;
  std::unique_ptr<httplib::Client> client;
};

inline json report(const std::string& aid, const std::string& state, std::optional<int> exit_code = std::nullopt) {
  json r = {{"assignment_id", aid}, {"state", state}};
  if (exit_code) r["exit_code"] = *exit_code;
  return r;
}

}  // namespace tessel::scheduler::testing
