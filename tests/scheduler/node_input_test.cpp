// What an agent sends about its node is checked before it is stored or logged:
// the address the scheduler will dial and the log server's port.
#include <set>

#include "harness.hpp"

namespace tessel::scheduler::testing {
namespace {

json registration(const std::string& address, int port) {
  return {{"node", "n1"}, {"address", address}, {"agent_port", port}, {"inventory", gaudi_inventory()}};
}

TEST(NodeInput, RegisterRefusesAnAddressOrPortThatCannotBeDialled) {
  Harness h;
  for (const std::string& bad :
       {std::string(""), std::string("h1\r\nX-Forged: 1"), std::string("http://h1"), std::string("h 1"),
        std::string("h1/x"), std::string(254, 'a'), std::string("h1\x1b[2J")}) {
    auto r = h.post("/v1/agent/register", registration(bad, 7451));
    ASSERT_TRUE(r);
    EXPECT_EQ(r->status, 400) << bad;
    EXPECT_EQ(Harness::body(r)["error"]["field"], "address") << r->body;
  }
  for (int port : {-1, 65536}) {
    auto r = h.post("/v1/agent/register", registration("h1", port));
    EXPECT_EQ(r->status, 400) << port;
    EXPECT_EQ(Harness::body(r)["error"]["field"], "agent_port") << r->body;
  }
  EXPECT_EQ(h.get("/v1/nodes/n1")->status, 404);  // Nothing stored.
  for (const std::string& good : {"node-1.example.com", "10.0.0.7", "fd00::7", "node_7"})
    EXPECT_EQ(h.post("/v1/agent/register", registration(good, 7451))->status, 200) << good;
}

TEST(NodeInput, EachRegistrationHandsTheAgentANewSchedulerKeyThatNoViewShows) {
  Harness h;
  std::set<std::string> keys;
  for (int i = 0; i < 2; ++i) {
    auto r = h.post("/v1/agent/register", registration("h1", 7451));
    ASSERT_EQ(r->status, 200) << r->body;
    const std::string key = Harness::body(r)["scheduler_key"];
    EXPECT_EQ(key.size(), 64U);
    EXPECT_EQ(key.find_first_not_of("0123456789abcdef"), std::string::npos);
    keys.insert(key);
    for (const char* path : {"/v1/nodes", "/v1/nodes/n1", "/v1/inventory"})
      EXPECT_EQ(h.get(path)->body.find(key), std::string::npos) << path;
  }
  EXPECT_EQ(keys.size(), 2U);
}

}  // namespace
}  // namespace tessel::scheduler::testing
