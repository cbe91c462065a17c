// Reservation for the first blocked job and backfill around it.
#include <gtest/gtest.h>

#include "test_helpers.hpp"

namespace tessel::scheduler {
namespace {

using testing::find_placement;
using testing::gaudi_node;
using testing::job;
using testing::reason;

constexpr int64_t kNow = 1'000'000;

class ReservationTest : public ::testing::Test {
 protected:
  void SetUp() override {
    a.upsert_node(gaudi_node("n1"));
    // Half the node busy until kNow + 100 s.
    ASSERT_TRUE(a.try_hold("running", {{"n1", 0, {0, 1, 2, 3}, {7, 6, 5, 4}}}, kNow + 100'000).ok());
  }
  ModuleGroupAllocator a;
};

TEST_F(ReservationTest, HeadJobGetsEarliestStart) {
  auto r = a.schedule({job("head", 8, 1, 5, 1)}, kNow);
  ASSERT_EQ(r.reservations.size(), 1u);
  EXPECT_EQ(r.reservations[0].job_id, "head");
  EXPECT_EQ(r.reservations[0].start_ms, kNow + 100'000);
  EXPECT_EQ(r.reservations[0].allocations.at(0).module_ids, (std::vector<int>{0, 1, 2, 3, 4, 5, 6, 7}));
  EXPECT_EQ(reason(r, "head"), "waiting for 8 free cards in one valid group");
  // The reservation is per pass: nothing stays blocked.
  EXPECT_EQ(a.free_groups("n1").at(4).size(), 1u);
}

TEST_F(ReservationTest, BackfillOnlyWhenItEndsBeforeTheReservation) {
  auto r = a.schedule({job("head", 8, 1, 5, 1), job("no-limit", 4, 1, 0, 2), job("too-long", 4, 1, 0, 3, 200),
                       job("short", 4, 1, 0, 4, 100), job("after", 2, 1, 0, 5, 10)},
                      kNow);
  EXPECT_EQ(reason(r, "no-limit"), "waiting behind reservation for job head");
  EXPECT_EQ(reason(r, "too-long"), "waiting behind reservation for job head");
  const Placement* p = find_placement(r, "short");
  ASSERT_NE(p, nullptr);
  EXPECT_EQ(p->allocations[0].module_ids, (std::vector<int>{4, 5, 6, 7}));
  // The node is now full; "after" waits for cards, not behind the reservation.
  EXPECT_EQ(reason(r, "after"), "waiting for 2 free cards in one valid group");
  // The head still starts at the same time.
  auto again = a.schedule({job("head", 8, 1, 5, 1)}, kNow);
  ASSERT_EQ(again.reservations.size(), 1u);
  EXPECT_EQ(again.reservations[0].start_ms, kNow + 100'000);
}

TEST_F(ReservationTest, UnknownEndReservesAnyway) {
  a.release("running");
  a.hold("forever", {{"n1", 0, {0}, {7}}}, std::nullopt);
  auto r = a.schedule({job("head", 8, 1, 5, 1), job("short", 4, 1, 0, 2, 1)}, kNow);
  ASSERT_EQ(r.reservations.size(), 1u);
  EXPECT_EQ(r.reservations[0].start_ms, std::nullopt);
  EXPECT_EQ(reason(r, "short"), "waiting behind reservation for job head");
}

TEST_F(ReservationTest, BackfillElsewhereIsFine) {
  a.upsert_node(gaudi_node("n2"));
  a.hold("n2-busy", {{"n2", 0, {0, 1, 2, 3, 4, 5, 6}, {}}}, std::nullopt);
  // head (8) reserves n1 (free at +100 s); n2 never frees. A single without a limit
  // may still use n2's last card.
  auto r = a.schedule({job("head", 8, 1, 5, 1), job("single", 1, 1, 0, 2)}, kNow);
  ASSERT_EQ(r.reservations.size(), 1u);
  EXPECT_EQ(r.reservations[0].allocations[0].node, "n1");
  const Placement* p = find_placement(r, "single");
  ASSERT_NE(p, nullptr);
  EXPECT_EQ(p->allocations[0].node, "n2");
  EXPECT_EQ(p->allocations[0].module_ids, (std::vector<int>{7}));
}

TEST_F(ReservationTest, JobsThatCanNeverRunDoNotReserve) {
  PendingJob impossible = job("impossible", 8, 1, 9, 0);
  impossible.model = "HL-325L";
  auto r = a.schedule({impossible, job("q", 4, 1, 0, 1)}, kNow);
  EXPECT_EQ(reason(r, "impossible"), "no node has 8 healthy HL-325L cards");
  EXPECT_TRUE(r.reservations.empty());
  EXPECT_NE(find_placement(r, "q"), nullptr);
}

TEST_F(ReservationTest, GangReservationUsesLatestOfItsNodes) {
  a.upsert_node(gaudi_node("n2"));
  a.hold("n2-busy", {{"n2", 0, {6, 7}, {1, 0}}}, kNow + 300'000);
  auto r = a.schedule({job("gang", 8, 2, 5, 1)}, kNow);
  ASSERT_EQ(r.reservations.size(), 1u);
  EXPECT_EQ(r.reservations[0].start_ms, kNow + 300'000);
  EXPECT_EQ(r.reservations[0].allocations.size(), 2u);
}

// Without time limits every candidate frees "never": the reservation stays where the
// previous pass put it, so the cards it drained are not handed to backfill when
// another node happens to have fewer busy cards.
TEST(StickyReservationTest, StaysOnTheNodeItDrainsWithoutTimeLimits) {
  ModuleGroupAllocator a;
  a.upsert_node(gaudi_node("n1"));
  a.upsert_node(gaudi_node("n2"));
  a.hold("a1", {{"n1", 0, {0, 1, 2}, {}}}, std::nullopt);
  a.hold("b1", {{"n2", 0, {0, 1}, {}}}, std::nullopt);
  a.hold("b2", {{"n2", 0, {2, 3}, {}}}, std::nullopt);
  // n1 has 3 busy cards, n2 4: the head reserves n1.
  auto first = a.schedule({job("head", 8, 1, 5, 1)}, kNow);
  ASSERT_EQ(first.reservations.size(), 1u);
  EXPECT_EQ(first.reservations[0].allocations.at(0).node, "n1");
  // n2 drops to 2 busy cards; n1 keeps 3. The reservation stays on n1, and a single
  // without a time limit goes to n2, not to n1's free cards.
  a.release("b2");
  auto second = a.schedule({job("head", 8, 1, 5, 1), job("single", 1, 1, 0, 2)}, kNow + 1'000);
  ASSERT_EQ(second.reservations.size(), 1u);
  EXPECT_EQ(second.reservations[0].allocations.at(0).node, "n1");
  const Placement* p = find_placement(second, "single");
  ASSERT_NE(p, nullptr);
  EXPECT_EQ(p->allocations.at(0).node, "n2");
}

TEST(StickyReservationTest, AnotherJobOrAnEarlierEndMovesIt) {
  ModuleGroupAllocator a;
  a.upsert_node(gaudi_node("n1"));
  a.upsert_node(gaudi_node("n2"));
  a.hold("a1", {{"n1", 0, {0, 1, 2}, {}}}, std::nullopt);
  a.hold("b1", {{"n2", 0, {0, 1, 2, 3}, {}}}, std::nullopt);
  ASSERT_EQ(a.schedule({job("head", 8, 1, 5, 1)}, kNow).reservations.at(0).allocations.at(0).node, "n1");
  // Another head job does not inherit the previous job's choice: n2 now has fewer busy cards.
  a.release("b1");
  a.hold("b1", {{"n2", 0, {0, 1}, {}}}, std::nullopt);
  auto other = a.schedule({job("other", 8, 1, 5, 2)}, kNow);
  EXPECT_EQ(other.reservations.at(0).allocations.at(0).node, "n2");
  // A known earlier end wins over staying: n1's holder gets a time limit.
  a.release("a1");
  a.hold("a1", {{"n1", 0, {0, 1, 2}, {}}}, kNow + 5'000);
  auto moved = a.schedule({job("other", 8, 1, 5, 2)}, kNow);
  EXPECT_EQ(moved.reservations.at(0).allocations.at(0).node, "n1");
  EXPECT_EQ(moved.reservations.at(0).start_ms, kNow + 5'000);
}

}  // namespace
}  // namespace tessel::scheduler
