// Reservations in placement (issue 32, part 4): during a window only the reservation's
// jobs run on its nodes (none in maintenance), before it only jobs whose time limit ends
// first, a reservation's jobs only on its nodes inside its window, with the reasons.
#include <gtest/gtest.h>

#include <set>

#include "src/node_filter.hpp"
#include "test_helpers.hpp"

namespace tessel::scheduler::testing {
namespace {

constexpr int64_t kHour = 3'600'000;
constexpr int64_t kStart = 100 * kHour;  // The window: [kStart, kStart + 2h).

std::set<std::string> nodes_of(const Placement* p) {
  std::set<std::string> out;
  if (p == nullptr) return out;
  for (const auto& a : p->allocations) out.insert(a.node);
  return out;
}

// n1 reserved for "demo" (or in maintenance), n2 free.
struct Reserved {
  ModuleGroupAllocator alloc;
  explicit Reserved(bool maintenance = false) {
    NodeSpec n1 = gaudi_node("n1");
    n1.reservations.push_back(ReservationWindow{"demo", kStart, kStart + 2 * kHour, maintenance});
    alloc.upsert_node(n1);
    alloc.upsert_node(gaudi_node("n2"));
  }
};

PendingJob in_reservation(const std::string& id, int devices, const api::NodeConstraints& c,
                          std::optional<int64_t> time_limit_s = std::nullopt) {
  PendingJob j = job(id, devices, 1, 0, 0, time_limit_s);
  j.constraints = &c;
  return j;
}

TEST(Reservations, DuringTheWindowOnlyItsJobsRunThere) {
  Reserved r;
  api::NodeConstraints demo;
  demo.reservation = "demo";
  const int64_t now = kStart + kHour;
  auto res = r.alloc.schedule(
      {job("j-other", 8, 1, 0, 1, 60), job("j-other2", 8, 1, 0, 2, 60), in_reservation("j-demo", 4, demo)}, now);
  EXPECT_EQ(nodes_of(find_placement(res, "j-demo")), std::set<std::string>{"n1"});
  EXPECT_EQ(nodes_of(find_placement(res, "j-other")), std::set<std::string>{"n2"});
  EXPECT_EQ(find_placement(res, "j-other2"), nullptr);
  // n2 is full; n1 is free but reserved: the reason names the reservation.
  auto again = r.alloc.schedule({job("j-x", 1, 1, 0, 3, 60)}, now);
  EXPECT_TRUE(again.placed.empty());
  EXPECT_EQ(reason(again, "j-x"), "node n1 is reserved for demo until 1970-01-05T06:00:00.000Z");
}

TEST(Reservations, BeforeTheWindowOnlyJobsEndingFirstStartThere) {
  Reserved r;
  r.alloc.upsert_node(gaudi_node("n2", {}));  // n2 without cards: n1 is the only node.
  const int64_t now = kStart - kHour;
  auto res = r.alloc.schedule({job("j-long", 8, 1, 0, 1, 2 * 3600), job("j-none", 8, 1, 0, 2)}, now);
  EXPECT_TRUE(res.placed.empty());
  EXPECT_EQ(reason(res, "j-long"), "node n1 is reserved for demo from 1970-01-05T04:00:00.000Z");
  EXPECT_EQ(reason(res, "j-none"),
            "node n1 is reserved for demo from 1970-01-05T04:00:00.000Z (the job has no time limit)");
  auto exact = r.alloc.schedule({job("j-hour", 8, 1, 0, 3, 3600)}, now);  // Would end as it starts.
  EXPECT_TRUE(exact.placed.empty());
  auto shorter = r.alloc.schedule({job("j-short", 8, 1, 0, 4, 3599)}, now);
  EXPECT_EQ(nodes_of(find_placement(shorter, "j-short")), std::set<std::string>{"n1"});
}

TEST(Reservations, ItsJobsWaitForTheWindowAndStayOnItsNodes) {
  Reserved r;
  api::NodeConstraints demo;
  demo.reservation = "demo";
  auto early = r.alloc.schedule({in_reservation("j-demo", 8, demo)}, kStart - 1000);
  EXPECT_TRUE(early.placed.empty());
  EXPECT_EQ(reason(early, "j-demo"), "waiting for reservation demo to start at 1970-01-05T04:00:00.000Z");
  // Its estimated start is the window's start (as Slurm's StartTime of a reservation job).
  ASSERT_EQ(early.reservations.size(), 1u);
  EXPECT_EQ(early.reservations[0].job_id, "j-demo");
  EXPECT_EQ(early.reservations[0].start_ms, kStart);
  auto open = r.alloc.schedule({in_reservation("j-demo", 8, demo), in_reservation("j-demo2", 8, demo)}, kStart);
  EXPECT_EQ(nodes_of(find_placement(open, "j-demo")), std::set<std::string>{"n1"});
  EXPECT_EQ(find_placement(open, "j-demo2"), nullptr);  // n2 is free, but not the reservation's.
  auto late = r.alloc.schedule({in_reservation("j-late", 1, demo)}, kStart + 3 * kHour);
  EXPECT_TRUE(late.placed.empty());
  EXPECT_EQ(reason(late, "j-late"), "reservation demo ended at 1970-01-05T06:00:00.000Z");
  EXPECT_TRUE(late.reservations.empty());  // No window ahead: no estimate.
  // After the window other jobs use n1 again, with or without a time limit.
  auto after = r.alloc.schedule({job("j-after", 8, 1, 0, 9), job("j-after2", 8, 1, 0, 10)}, kStart + 3 * kHour);
  EXPECT_EQ(after.placed.size(), 1u);  // n1 holds j-demo still; n2 takes one.
}

TEST(Reservations, MaintenanceLetsNoJobRun) {
  Reserved r(/*maintenance=*/true);
  api::NodeConstraints demo;
  demo.reservation = "demo";
  r.alloc.upsert_node(gaudi_node("n2", {}));
  auto res = r.alloc.schedule({in_reservation("j-demo", 1, demo), job("j-x", 1, 1, 0, 2, 60)}, kStart);
  EXPECT_TRUE(res.placed.empty());
  EXPECT_EQ(reason(res, "j-x"), "node n1 is in maintenance (demo) until 1970-01-05T06:00:00.000Z");
  EXPECT_EQ(reason(res, "j-demo"), "in maintenance (demo) until 1970-01-05T06:00:00.000Z");
}

TEST(Reservations, UnreservedNodesAndJobsWithoutOneAreUnaffected) {
  detail::Node plain;
  PendingJob j = job("j", 1);
  EXPECT_TRUE(detail::reservation_ok(plain, j));
  api::NodeConstraints demo;
  demo.reservation = "demo";
  j.constraints = &demo;
  EXPECT_FALSE(detail::reservation_ok(plain, j));
  EXPECT_EQ(detail::reservation_note(plain, j), "not in reservation demo");
}

// Preemption never empties a reserved node for a job that may not run there, and does
// for a job of the open window.
TEST(Reservations, PreemptionKeepsToTheNodesTheJobMayUse) {
  Reserved r;
  const int64_t now = kStart + kHour;  // demo's window is open on n1.
  std::vector<RunningJob> running;
  for (const char* n : {"n1", "n2"}) {
    const std::string id = std::string("j-on-") + n;
    r.alloc.hold(id, {api::Allocation{n, 0, {0, 1, 2, 3, 4, 5, 6, 7}, {}}}, std::nullopt);
    running.push_back(RunningJob{id, -1, true, n[1] == '1' ? 9000 : 1000});  // n1's is the newest.
  }
  std::vector<ProjectLimits> limits(1);
  limits[0].name = "mine";
  limits[0].guaranteed["*"] = 16;
  PendingJob plain = job("j-plain", 8, 1, 0, 1, 60);
  plain.project = 0;
  auto out = r.alloc.plan_preemption(PreemptionRequest{&plain, running, &limits, now, 0});
  ASSERT_TRUE(out.plan);
  EXPECT_EQ(out.plan->victims, std::vector<std::string>{"j-on-n2"});  // Not n1's, though newer.
  api::NodeConstraints demo;
  demo.reservation = "demo";
  PendingJob member = in_reservation("j-demo", 8, demo);
  member.project = 0;
  out = r.alloc.plan_preemption(PreemptionRequest{&member, running, &limits, now, 0});
  ASSERT_TRUE(out.plan);
  EXPECT_EQ(out.plan->victims, std::vector<std::string>{"j-on-n1"});
  // Before the window the member may not run at all: nothing is stopped for it.
  out = r.alloc.plan_preemption(PreemptionRequest{&member, running, &limits, kStart - 1000, 0});
  EXPECT_FALSE(out.plan);
}

}  // namespace
}  // namespace tessel::scheduler::testing
