// Gaudi node health in the scheduler: driver/firmware versions (job constraint,
// version-skew metric and census) and NIC ports down (gangs avoid the node, the
// pending reason says why), over the REST API.
#include "harness.hpp"
#include "tessel/scheduler/version_skew.hpp"

namespace tessel::scheduler::testing {
namespace {

// gaudi_inventory() with a driver version, a firmware version on every card, and
// port 1 of `module_down` down (-1: all ports up).
json health_inventory(const std::string& driver, const std::string& firmware = "", int module_down = -1) {
  json inv = gaudi_inventory();
  inv["driver_version"] = driver;
  for (auto& d : inv["devices"]) {
    if (!firmware.empty()) d["firmware_version"] = firmware;
    const bool down = d["module_id"] == module_down;
    d["ports_total"] = 3;
    d["ports_up"] = down ? 2 : 3;
    d["ports_down"] = down ? json::array({1}) : json::array();
  }
  return inv;
}

void register_with(Harness& h, const std::string& name, const json& inventory) {
  auto r = h.post(
      "/v1/agent/register",
      {{"node", name}, {"address", "10.0.0.1"}, {"agent_port", 0}, {"inventory", inventory}, {"tasks", json::array()}});
  ASSERT_TRUE(r);
  ASSERT_EQ(r->status, 200) << r->body;
}

std::string reason_of(Harness& h, const std::string& id) {
  json job = Harness::body(h.get("/v1/jobs/" + id));
  return job.contains("reason") && job["reason"].is_string() ? job["reason"].get<std::string>() : "";
}

bool wait_reason(Harness& h, const std::string& id, const std::string& part) {
  return eventually([&] { return reason_of(h, id).find(part) != std::string::npos; });
}

TEST(GaudiHealth, VersionSkewMetricFollowsTheNodes) {
  Harness h;
  register_with(h, "n1", health_inventory("1.18.0-ee698fb", "hl-gaudi2-1.18.0-fw-53.1.1-sec-9"));
  register_with(h, "n2", health_inventory("1.18.0-ee698fb", "hl-gaudi2-1.18.0-fw-53.1.1-sec-9"));
  EXPECT_NE(h.get("/metrics")->body.find("tessel_model_version_skew{model=\"HL-225\"} 0\n"), std::string::npos);

  auto hb = h.post("/v1/agent/heartbeat", {{"node", "n2"}, {"inventory", health_inventory("1.17.0-e4d8f8b")}});
  ASSERT_EQ(hb->status, 200) << hb->body;
  EXPECT_NE(h.get("/metrics")->body.find("tessel_model_version_skew{model=\"HL-225\"} 1\n"), std::string::npos);

  hb = h.post("/v1/agent/heartbeat",
              {{"node", "n2"}, {"inventory", health_inventory("1.18.0-ee698fb", "hl-gaudi2-1.18.0-fw-53.1.2-sec-9")}});
  ASSERT_EQ(hb->status, 200) << hb->body;  // Same driver, other firmware: still skewed.
  EXPECT_NE(h.get("/metrics")->body.find("tessel_model_version_skew{model=\"HL-225\"} 1\n"), std::string::npos);
  auto inv = Harness::body(h.get("/v1/inventory"));
  EXPECT_EQ(inv["models"][0]["firmware_versions"].size(), 2u) << inv.dump();
  EXPECT_EQ(inv["models"][0]["driver_versions"], json::array({"1.18.0-ee698fb"}));

  hb = h.post("/v1/agent/heartbeat",
              {{"node", "n2"}, {"inventory", health_inventory("1.18.0-ee698fb", "hl-gaudi2-1.18.0-fw-53.1.1-sec-9")}});
  ASSERT_EQ(hb->status, 200) << hb->body;
  EXPECT_NE(h.get("/metrics")->body.find("tessel_model_version_skew{model=\"HL-225\"} 0\n"), std::string::npos);
}

// `cards` HL-225 cards without firmware versions, on a node with `driver`.
api::NodeInventory hl225_cards(const std::string& driver, int cards) {
  api::NodeInventory inv;
  inv.driver_version = driver;
  inv.devices.resize(static_cast<size_t>(cards));
  for (auto& d : inv.devices) d.model = "HL-225";
  return inv;
}

TEST(GaudiHealth, UnknownVersionsAreNotSkew) {
  VersionCensus c;
  api::NodeInventory a = hl225_cards("1.17.0-e4d8f8b", 2), b = hl225_cards("unknown", 2);
  a.devices[0].firmware_version = "unknown";
  c.add(a);
  c.add(b);
  EXPECT_EQ(c.skew(), (std::map<std::string, bool>{{"HL-225", false}}));
  b.driver_version = "1.16.2-f195ec4";
  c.add(b);
  EXPECT_EQ(c.skewed(), (std::map<std::string, std::string>{{"HL-225", "driver 1.16.2-f195ec4, 1.17.0-e4d8f8b"}}));
}

TEST(GaudiHealth, ACensusTakesBackWhatANodeAddedAndForgetsEmptyModels) {
  VersionCensus c;
  const auto ea = VersionCensus::entry_of(hl225_cards("1.17.0-e4d8f8b", 8));
  const auto eb = VersionCensus::entry_of(hl225_cards("1.18.0-ee698fb", 2));
  c.add(ea);
  c.add(eb);
  EXPECT_EQ(c.skewed(), (std::map<std::string, std::string>{{"HL-225", "driver 1.17.0-e4d8f8b, 1.18.0-ee698fb"}}));
  c.remove(eb);  // Eight cards of one driver left.
  EXPECT_EQ(c.skew(), (std::map<std::string, bool>{{"HL-225", false}}));
  c.remove(ea);
  EXPECT_TRUE(c.skew().empty());
  c.add(eb);
  EXPECT_EQ(c.skew(), (std::map<std::string, bool>{{"HL-225", false}}));
}

TEST(GaudiHealth, VersionSkewEndsWhenTheOddNodeIsDeleted) {
  Harness h;
  register_with(h, "n1", health_inventory("1.18.0-ee698fb"));
  register_with(h, "n2", health_inventory("1.17.0-e4d8f8b"));
  EXPECT_NE(h.get("/metrics")->body.find("tessel_model_version_skew{model=\"HL-225\"} 1\n"), std::string::npos);
  auto del = h.client->Delete("/v1/nodes/n2");
  ASSERT_EQ(del->status, 200) << del->body;
  EXPECT_NE(h.get("/metrics")->body.find("tessel_model_version_skew{model=\"HL-225\"} 0\n"), std::string::npos);
}

TEST(GaudiHealth, DriverVersionConstraint) {
  Harness h;
  register_with(h, "n1", health_inventory("1.17.0-e4d8f8b"));
  auto stuck = h.submit({{"command", {"x"}}, {"devices", 1}, {"driver_version", "1.18.0"}});
  EXPECT_TRUE(wait_reason(h, stuck["id"], "(driver_version 1.18.0; node n1: driver 1.17.0-e4d8f8b)"))
      << reason_of(h, stuck["id"]);
  auto ok = h.submit({{"command", {"x"}}, {"devices", 1}, {"driver_version", "1.17"}});
  EXPECT_TRUE(h.wait_state(ok["id"], "assigned")) << reason_of(h, ok["id"]);
  EXPECT_EQ(Harness::body(h.get("/v1/jobs/" + ok["id"].get<std::string>()))["spec"]["driver_version"], "1.17");
  auto bad = h.post("/v1/jobs", {{"command", {"x"}}, {"driver_version", "1.17; rm"}});
  EXPECT_EQ(bad->status, 400);
  EXPECT_NE(bad->body.find("driver_version"), std::string::npos) << bad->body;
}

TEST(GaudiHealth, GangAvoidsNodeWithPortsDownAndSaysWhy) {
  Harness h;
  register_with(h, "n1", health_inventory("1.18.0"));
  register_with(h, "n3", health_inventory("1.18.0", "", 5));
  auto gang = h.submit({{"command", {"x"}}, {"devices", 8}, {"nodes", 2}});
  EXPECT_TRUE(wait_reason(h, gang["id"], "node n3: ports down on module 5")) << reason_of(h, gang["id"]);
  EXPECT_EQ(h.job_state(gang["id"]), "pending");
  auto single = h.submit({{"command", {"x"}}, {"devices", 8}, {"nodes", 1}, {"priority", -1}});
  ASSERT_TRUE(h.wait_state(single["id"], "assigned")) << reason_of(h, single["id"]);

  auto nodes = Harness::body(h.get("/v1/nodes"))["nodes"];
  ASSERT_EQ(nodes.size(), 2u);
  EXPECT_EQ(nodes[1]["name"], "n3");
  EXPECT_EQ(nodes[1]["inventory"]["devices"][5]["ports_down"], json::array({1}));
  EXPECT_EQ(nodes[1]["inventory"]["driver_version"], "1.18.0");
  EXPECT_EQ(Harness::body(h.get("/v1/inventory"))["models"][0]["cards_ports_down"], 1);

  // The port comes back: the gang is placed once cards are free.
  h.post("/v1/agent/heartbeat", {{"node", "n3"}, {"inventory", health_inventory("1.18.0")}});
  EXPECT_TRUE(wait_reason(h, gang["id"], "waiting for 8 free")) << reason_of(h, gang["id"]);
}

}  // namespace
}  // namespace tessel::scheduler::testing
