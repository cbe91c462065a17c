// CardHistory (the console's card charts) and GET /v1/nodes/{name}/history.
#include "tessel/scheduler/card_history.hpp"

#include "harness.hpp"

namespace tessel::scheduler::testing {
namespace {

api::Device card(int module_id, int64_t util) {
  api::Device d;
  d.index = module_id;
  d.module_id = module_id;
  d.model = "HL-225";
  d.utilization_pct = util;
  d.memory_total_mib = 1000;
  d.memory_used_mib = 250;
  return d;
}

TEST(CardHistory, OneSamplePerResolutionWithinTheWindow) {
  CardHistory h(/*window_ms=*/60'000, /*resolution_ms=*/10'000);
  h.record("n1", {card(0, 1), card(1, 2)}, 1'000);
  h.record("n1", {card(0, 99), card(1, 99)}, 5'000);  // Within the resolution: skipped.
  h.record("n1", {card(0, 3), card(1, 4)}, 11'000);
  auto cards = h.of("n1", 11'000);
  ASSERT_EQ(cards.size(), 2U);
  EXPECT_EQ(cards[0].module_id, 0);
  ASSERT_EQ(cards[0].samples.size(), 2U);
  EXPECT_EQ(cards[0].samples[0].at_ms, 1'000);
  EXPECT_EQ(cards[0].samples[0].utilization_pct, 1.0F);
  EXPECT_EQ(cards[0].samples[1].utilization_pct, 3.0F);
  EXPECT_EQ(cards[0].samples[1].memory_used_pct, 25.0F);
  EXPECT_FALSE(cards[0].samples[1].temperature_c.has_value());  // Not reported: absent, not 0.
  // Past the window the old samples go, whether or not the node reports again.
  EXPECT_EQ(h.of("n1", 61'500)[0].samples.size(), 1U);
  h.record("n1", {card(0, 5), card(1, 6)}, 71'500);
  ASSERT_EQ(h.of("n1", 71'500)[0].samples.size(), 1U);
  EXPECT_EQ(h.of("n1", 71'500)[0].samples[0].utilization_pct, 5.0F);
  EXPECT_TRUE(h.of("n2", 71'500).empty());
}

TEST(CardHistory, BoundedPerCardAndForgetsGoneCardsAndNodes) {
  CardHistory h(/*window_ms=*/100'000, /*resolution_ms=*/10'000);
  for (int64_t t = 0; t <= 1'000'000; t += 10'000) h.record("n1", {card(0, t / 10'000), card(3, 0)}, t);
  auto cards = h.of("n1", 1'000'000);
  ASSERT_EQ(cards.size(), 2U);
  EXPECT_LE(cards[0].samples.size(), 11U);
  EXPECT_EQ(cards[0].samples.back().utilization_pct, 100.0F);
  h.record("n1", {card(0, 1)}, 1'010'000);  // Module 3 is no longer reported.
  ASSERT_EQ(h.of("n1", 1'010'000).size(), 1U);
  h.forget("n1");
  EXPECT_TRUE(h.of("n1", 1'010'000).empty());
}

TEST(CardHistoryApi, HeartbeatsFillItAndEveryReaderSeesIt) {
  auto t = parse_tokens("admintok admin root\nalicetok user alice\nn1tok agent n1\n");
  ASSERT_TRUE(t.ok());
  Harness h(*t);
  h.register_node("n1", json::array(), "n1tok");
  h.clock.advance_ms(10'000);
  ASSERT_EQ(h.heartbeat("n1", json::array(), "n1tok")->status, 200);  // Within 30 s: not sampled.
  h.clock.advance_ms(25'000);
  ASSERT_EQ(h.heartbeat("n1", json::array(), "n1tok")->status, 200);

  auto r = h.get("/v1/nodes/n1/history", "alicetok");
  ASSERT_EQ(r->status, 200) << r->body;
  json body = Harness::body(r);
  EXPECT_EQ(body["node"], "n1");
  EXPECT_EQ(body["resolution_s"], 30);
  EXPECT_EQ(body["fields"][0], "time");
  ASSERT_EQ(body["cards"].size(), 8U);
  EXPECT_EQ(body["cards"][5]["module_id"], 5);
  ASSERT_EQ(body["cards"][5]["samples"].size(), 2U) << body.dump();
  const json& s = body["cards"][5]["samples"][1];
  EXPECT_TRUE(s[0].is_string());  // RFC 3339.
  EXPECT_EQ(s[1], 10.0);          // utilization_pct
  EXPECT_NEAR(s[2].get<double>(), 100.0 * 512 / 98304, 1e-3);
  EXPECT_EQ(s[3], 40.0);
  EXPECT_EQ(s[4], 200.0);

  EXPECT_EQ(h.get("/v1/nodes/n1/history", "")->status, 401);
  auto missing = h.get("/v1/nodes/nope/history", "alicetok");
  EXPECT_EQ(missing->status, 404);
  EXPECT_EQ(Harness::body(missing)["error"]["code"], "not_found");
  // A deleted node's history goes with it.
  ASSERT_EQ(h.client->Delete("/v1/nodes/n1", h.auth("admintok"))->status, 200);
  EXPECT_EQ(h.get("/v1/nodes/n1/history", "alicetok")->status, 404);
}

}  // namespace
}  // namespace tessel::scheduler::testing
