// Restart: jobs, nodes, allocations and fences come back from the database.
#include "harness.hpp"
#include "temp_dir.hpp"

namespace tessel::scheduler::testing {
namespace {

TEST(Restart, StateAndHoldsAreRestored) {
  const testkit::TempDir dir("tessel-restart");
  const std::string db = dir.str("s.db");
  FakeClock clock;
  const ServiceOptions opts = test_service_options();
  std::string id, key;
  {
    auto store = open_sqlite_store(db);
    ASSERT_TRUE(store.ok()) << store.error().message;
    Service svc(**store, clock, std::nullopt, opts);
    ASSERT_TRUE(svc.start().ok());
    httplib::Client c("127.0.0.1", svc.port());
    auto reg =
        c.Post("/v1/agent/register",
               json{{"node", "n1"}, {"address", "h1"}, {"agent_port", 7451}, {"inventory", gaudi_inventory()}}.dump(),
               "application/json");
    ASSERT_EQ(reg->status, 200);
    key = json::parse(reg->body)["scheduler_key"];
    auto r = c.Post("/v1/jobs", json{{"command", {"x"}}, {"devices", 4}}.dump(), "application/json");
    ASSERT_EQ(r->status, 201);
    id = json::parse(r->body)["id"];
    ASSERT_TRUE(
        eventually([&] { return json::parse(c.Get(("/v1/jobs/" + id).c_str())->body)["state"] == "assigned"; }));
    ASSERT_EQ(c.Post("/v1/nodes/n1/drain", "{}", "application/json")->status, 200);
  }
  auto store = open_sqlite_store(db);
  ASSERT_TRUE(store.ok());
  Service svc(**store, clock, std::nullopt, opts);
  ASSERT_TRUE(svc.start().ok());
  httplib::Client c("127.0.0.1", svc.port());
  auto j = json::parse(c.Get(("/v1/jobs/" + id).c_str())->body);
  EXPECT_EQ(j["state"], "assigned");
  auto n = json::parse(c.Get("/v1/nodes/n1")->body);
  EXPECT_EQ(n["state"], "draining");
  EXPECT_EQ(n["inventory"]["devices"][0]["job"], id);
  // Log reads still reach the agent with the key it was given before the restart.
  auto target = svc.state().log_target(id, 0);
  ASSERT_TRUE(target) << target.error().message;
  EXPECT_EQ(target->scheduler_key, key);
  // New ids continue after the restored ones.
  auto r = c.Post("/v1/jobs", json{{"command", {"x"}}}.dump(), "application/json");
  EXPECT_GT(json::parse(r->body)["id"].get<std::string>(), id);
}

}  // namespace
}  // namespace tessel::scheduler::testing
