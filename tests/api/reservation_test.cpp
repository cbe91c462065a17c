// Reservations on the wire (issue 32, part 4): the request's rules, each refusal naming
// its field, the stored form's round trip, and JobSpec's reservation field.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "tessel/api/job.hpp"
#include "tessel/api/reservation.hpp"

#include "spec_checks.hpp"

using nlohmann::json;
using tessel::api::parse_job_spec;
using tessel::api::parse_reservation_request;
using tessel::api::Reservation;
using tessel::api::testing::error_field;
using tessel::api::testing::spec;

namespace {

constexpr int64_t kNow = 1'800'000'000'000;

json request(const json& extra) {
  json j = {{"name", "demo"}, {"nodes", {"n2", "n1"}}, {"start", "2027-01-15T08:00:00Z"}, {"end", 1'800'010'000}};
  j.update(extra);
  return j;
}

std::string refused_field(const json& j) {
  auto r = parse_reservation_request(j, kNow);
  EXPECT_FALSE(r.ok()) << j.dump();
  return r.ok() ? "<no error>" : r.error().field;
}

TEST(Reservation, ParsesNodesOrCountWithTimesAsTextOrSeconds) {
  auto r = parse_reservation_request(request({{"users", {"alice"}}, {"projects", {"vision"}}}), kNow);
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(r->name, "demo");
  EXPECT_EQ(r->nodes, (std::vector<std::string>{"n1", "n2"}));  // Sorted.
  EXPECT_EQ(r->start_ms, int64_t{1'800'000'000} * 1000);        // 2027-01-15T08:00:00Z.
  EXPECT_EQ(r->end_ms, int64_t{1'800'010'000} * 1000);
  EXPECT_TRUE(r->allows("alice", "default"));
  EXPECT_TRUE(r->allows("bob", "vision"));
  EXPECT_FALSE(r->allows("bob", "default"));
  // count with a selector; no start: now.
  auto c = parse_reservation_request(
      {{"name", "m"}, {"count", 2}, {"node_selector", {{"rack", "r1"}}}, {"end", 1'800'000'100}, {"maintenance", true}},
      kNow);
  ASSERT_TRUE(c.ok()) << c.error().message;
  EXPECT_EQ(c->count, 2);
  EXPECT_TRUE(c->nodes.empty());
  EXPECT_EQ(c->start_ms, kNow);
  EXPECT_TRUE(c->maintenance);
}

TEST(Reservation, RefusalsNameTheField) {
  EXPECT_EQ(refused_field(request({{"name", "-bad"}})), "name");
  EXPECT_EQ(refused_field(request({{"nodes", {"n1", "n1"}}})), "nodes[1]");
  EXPECT_EQ(refused_field(request({{"nodes", {"bad name"}}})), "nodes[0]");
  EXPECT_EQ(refused_field(request({{"nodes", json::array()}})), "nodes");
  EXPECT_EQ(refused_field(request({{"count", 2}})), "nodes");  // Both.
  json neither = request(json::object());
  neither.erase("nodes");
  EXPECT_EQ(refused_field(neither), "nodes");
  EXPECT_EQ(refused_field(request({{"count", 0}, {"nodes", nullptr}})), "count");
  EXPECT_EQ(refused_field(request({{"end", "2027-01-15T08:00:00Z"}})), "end");  // end == start.
  EXPECT_EQ(refused_field(request({{"end", "2027-01-15T07:00:00Z"}})), "end");  // Before it.
  EXPECT_EQ(refused_field(request({{"start", "tomorrow"}})), "start");
  EXPECT_EQ(refused_field(request({{"end", -5}})), "end");
  json no_end = request(json::object());
  no_end.erase("end");
  EXPECT_EQ(refused_field(no_end), "end");
  EXPECT_EQ(refused_field(request({{"users", {""}}})), "users[0]");
  EXPECT_EQ(refused_field(request({{"projects", {"no/slash"}}})), "projects[0]");
  EXPECT_EQ(refused_field(request({{"maintenance", true}, {"users", {"alice"}}})), "maintenance");
  EXPECT_EQ(refused_field(request({{"node_selector", {{"rack", "r1"}}}})), "node_selector");
  EXPECT_EQ(refused_field(request({{"colour", "red"}})), "colour");
  EXPECT_FALSE(parse_reservation_request(json::array(), kNow).ok());
}

TEST(Reservation, StoredFormRoundTrips) {
  auto r = parse_reservation_request(request({{"users", {"alice"}}}), kNow);
  ASSERT_TRUE(r.ok());
  r->created_by = "root";
  r->created_at_ms = kNow;
  auto back = tessel::api::reservation_from_json(tessel::api::to_json(*r));
  ASSERT_TRUE(back.ok()) << back.error().message;
  EXPECT_EQ(*back, *r);
  EXPECT_FALSE(tessel::api::reservation_from_json(json{{"name", "x"}}).ok());
}

TEST(Reservation, JobSpecNamesOne) {
  auto s = parse_job_spec(spec({{"reservation", "demo"}}));
  ASSERT_TRUE(s.ok()) << s.error().message;
  EXPECT_EQ(s->constraints.reservation, "demo");
  EXPECT_FALSE(s->constraints.empty());
  EXPECT_EQ(tessel::api::to_json(*s)["reservation"], "demo");
  EXPECT_EQ(*parse_job_spec(tessel::api::to_json(*s)), *s);
  EXPECT_EQ(error_field(spec({{"reservation", "bad name"}})), "reservation");
  EXPECT_EQ(error_field(spec({{"reservation", 7}})), "reservation");
  EXPECT_FALSE(tessel::api::to_json(*parse_job_spec(spec(json::object()))).contains("reservation"));
}

}  // namespace
