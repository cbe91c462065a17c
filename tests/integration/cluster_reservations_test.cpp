// Reservations with the real scheduler and agents (issue 32, part 4): two agents on
// fake hl-smi; a maintenance reservation keeps every job off n1, a reservation of n2
// for project vision runs its members' jobs and no one else's (403 naming the field),
// and both hold across a scheduler restart until an admin deletes them.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <chrono>

#include "cluster.hpp"
#include "files.hpp"

using namespace tessel::itest;
using nlohmann::json;
using namespace std::chrono_literals;

namespace {

// Unix seconds a day from now: the windows below open at once and outlast the test.
int64_t in_a_day() {
  return std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch()).count() +
         86'400;
}

std::string write_secret(const std::string& path, const std::string& text) {
  tessel::testkit::write_file(path, text);
  EXPECT_EQ(::chmod(path.c_str(), 0600), 0);
  return path;
}

std::string node_of(const json& job) {
  return job["allocations"].empty() ? "" : job["allocations"][0]["node"].get<std::string>();
}

TEST(ClusterReservations, MaintenanceAndAProjectReservationAcrossARestart) {
  Cluster c;
  c.scheduler_args = {"--tokens", write_secret(c.root() + "/tokens",
                                               "admintok admin root\nalicetok user alice vision\nbobtok user bob\n"
                                               "agent1tok agent n1\nagent2tok agent n2\n")};
  c.api_token = "admintok";
  c.start_scheduler();
  for (const char* n : {"n1", "n2"}) {
    c.agent_args = {"--token-file", write_secret(c.root() + "/" + n + ".token", std::string("agent") + n[1] + "tok\n")};
    c.start_agent(n);
    ASSERT_TRUE(c.wait_node_state(n, "ready")) << c.agent(n).stderr_text();
  }
  ASSERT_EQ(c.rest().post("/v1/projects", {{"name", "vision"}}).status, 201);
  auto fix = c.rest().post("/v1/reservations",
                           {{"name", "fix"}, {"nodes", {"n1"}}, {"end", in_a_day()}, {"maintenance", true}});
  ASSERT_EQ(fix.status, 201) << fix.text;
  auto team = c.rest().post("/v1/reservations",
                            {{"name", "team"}, {"count", 1}, {"end", in_a_day()}, {"projects", {"vision"}}});
  ASSERT_EQ(team.status, 201) << team.text;
  EXPECT_EQ(team.body["nodes"], json({"n2"})) << team.text;  // n1 is fix's.
  auto overlap = c.rest().post("/v1/reservations", {{"name", "x"}, {"nodes", {"n2"}}, {"end", in_a_day()}});
  EXPECT_EQ(overlap.status, 400);
  EXPECT_EQ(overlap.body["error"]["field"], "nodes") << overlap.text;

  tessel::testkit::RestClient bob = c.rest(), alice = c.rest();
  bob.set_token("bobtok");
  alice.set_token("alicetok");
  // bob's job runs nowhere: n1 is in maintenance, n2 is team's.
  auto plain = bob.post("/v1/jobs", {{"command", {"/bin/true"}}, {"devices", 1}, {"time_limit_s", 60}});
  ASSERT_EQ(plain.status, 201) << plain.text;
  const std::string waiting = plain.body["id"];
  ASSERT_TRUE(c.wait_reason(waiting, "node n1 is in maintenance (fix) until"));
  auto not_member = bob.post("/v1/jobs", {{"command", {"/bin/true"}}, {"reservation", "team"}});
  EXPECT_EQ(not_member.status, 403) << not_member.text;
  EXPECT_EQ(not_member.body["error"]["field"], "reservation");
  auto unknown = alice.post("/v1/jobs", {{"command", {"/bin/true"}}, {"reservation", "nope"}});
  EXPECT_EQ(unknown.status, 400) << unknown.text;
  // alice's project job runs on n2.
  auto member = [&] {
    auto r = alice.post("/v1/jobs", {{"command", {"/bin/true"}}, {"devices", 8}, {"reservation", "team"}});
    EXPECT_EQ(r.status, 201) << r.text;
    auto done = c.wait_job(r.body.value("id", ""), {"succeeded", "failed"});
    return done ? node_of(*done) : std::string();
  };
  EXPECT_EQ(member(), "n2");

  // A restart keeps both reservations and what they do.
  c.stop_scheduler();
  c.start_scheduler();
  for (const char* n : {"n1", "n2"}) ASSERT_TRUE(c.wait_node_state(n, "ready"));
  const json list = c.get("/v1/reservations");
  ASSERT_EQ(list["reservations"].size(), 2u) << list.dump();
  EXPECT_EQ(list["reservations"][0]["state"], "active");
  EXPECT_EQ(c.get("/v1/nodes/n1")["reservations"][0]["name"], "fix");
  EXPECT_EQ(member(), "n2");
  EXPECT_EQ(c.get("/v1/jobs/" + waiting)["state"], "pending");
  // Maintenance over: bob's job runs on n1.
  ASSERT_EQ(c.rest().del("/v1/reservations/fix").status, 200);
  auto done = c.wait_job(waiting, {"succeeded", "failed"});
  ASSERT_TRUE(done);
  EXPECT_EQ(node_of(*done), "n1");
}

}  // namespace
