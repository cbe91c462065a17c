#include "src/group_masks.hpp"

#include <gtest/gtest.h>

namespace tessel::scheduler::masks {
namespace {

TEST(GroupMasks, EmptyNodeTakesLowestSingle) { EXPECT_EQ(gaudi_best_group(0xFF, 1), 0x01u); }

TEST(GroupMasks, FillsHalfUsedPairBeforeBreakingAWholeOne) {
  // Module 0 used: module 1 is the single whose pair is already broken.
  EXPECT_EQ(gaudi_best_group(0xFE, 1), 0x02u);
  EXPECT_EQ(gaudi_fit_block(0xFE, 1), 1);
}

TEST(GroupMasks, FillsHalfUsedQuadBeforeBreakingAWholeOne) {
  // Modules 0,1 used: pair {2,3} sits in a broken quad, {4,5} would break a whole quad.
  EXPECT_EQ(gaudi_best_group(0xFC, 2), 0x0Cu);
  EXPECT_EQ(gaudi_fit_block(0xFC, 2), 2);
}

TEST(GroupMasks, OnlyAlignedGroups) {
  // Modules 1,2 free: no valid pair ({1,2} is not one).
  EXPECT_EQ(gaudi_best_group(0x06, 2), 0u);
  // Modules 2..5 free: no valid quad.
  EXPECT_EQ(gaudi_best_group(0x3C, 4), 0u);
  EXPECT_EQ(gaudi_best_group(0xF0, 4), 0xF0u);
  EXPECT_EQ(gaudi_best_group(0x7F, 8), 0u);
  EXPECT_EQ(gaudi_best_group(0xFF, 8), 0xFFu);
}

TEST(GroupMasks, InvalidSizes) {
  EXPECT_EQ(gaudi_best_group(0xFF, 3), 0u);
  EXPECT_EQ(size_log(3), -1);
  EXPECT_EQ(size_log(8), 3);
}

// Inferentia: best fit is the shortest free run that holds the group, from its low end.
TEST(GroupMasks, RingTakesTheShortestRunThatFits) {
  // Free: 0-1 (2), 4-8 (5), 11-15 (5). Two devices: run 0-1 exactly.
  const Mask free = 0x0003 | 0x01F0 | 0xF800;
  EXPECT_EQ(ring_best_group(free, 2), 0x0003u);
  EXPECT_EQ(ring_fit_run(free, 2), 2);
  // Three: the first of the two runs of 5.
  EXPECT_EQ(ring_best_group(free, 3), 0x0070u);
  EXPECT_EQ(ring_fit_run(free, 3), 5);
  EXPECT_EQ(ring_best_group(free, 6), 0u);
  EXPECT_EQ(ring_fit_run(free, 6), 0);
  EXPECT_EQ(ring_best_group(0xFFFF, 16), 0xFFFFu);
  EXPECT_EQ(ring_best_group(0x1FFFF, 17), 0u);  // Rings hold at most 16.
  EXPECT_EQ(ring_best_group(0x10000, 1), 0u);   // Slot 16 is outside the ring.
  std::vector<Mask> runs;
  for_each_ring_group(0x0F, 3, [&](Mask m) { runs.push_back(m); });
  EXPECT_EQ(runs, (std::vector<Mask>{0x07, 0x0E}));
  EXPECT_EQ(size_index(1), 0);
  EXPECT_EQ(size_index(32), 31);
  EXPECT_EQ(size_index(0), -1);
  EXPECT_EQ(size_index(33), -1);
}

TEST(GroupMasks, GroupsListedLowestFirst) {
  EXPECT_EQ(gaudi_groups(0xFF, 2), (std::vector<Mask>{0x03, 0x0C, 0x30, 0xC0}));
  EXPECT_EQ(gaudi_groups(0x0F, 4), (std::vector<Mask>{0x0F}));
}

TEST(GroupMasks, LowestBits) {
  EXPECT_EQ(lowest_bits(0b101101, 3), 0b001101u);
  EXPECT_EQ(lowest_bits(0b101, 3), 0u);
  EXPECT_EQ(slots(0b1010), (std::vector<int>{1, 3}));
}

TEST(GroupMasks, MooreThreadsPrefersOneNumaHalf) {
  // Slots 0,1 used: four cards come from 4-7, not 2-5.
  EXPECT_EQ(numa_half_first(0xFC, 4), 0xF0u);
  // The fuller half with room first: slot 0 used, a pair from {1,2,3}.
  EXPECT_EQ(numa_half_first(0xFE, 2), 0x06u);
  // A tie goes to the lower half.
  EXPECT_EQ(numa_half_first(0xFF, 2), 0x03u);
  // No half has room: any free slots, lowest first; 8 takes all.
  EXPECT_EQ(numa_half_first(0x3C, 4), 0x3Cu);
  EXPECT_EQ(numa_half_first(0xFF, 8), 0xFFu);
  EXPECT_EQ(numa_half_first(0x7F, 8), 0u);
  EXPECT_EQ(numa_half_first(0xFF, 0), 0u);
}

}  // namespace
}  // namespace tessel::scheduler::masks
