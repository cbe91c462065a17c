// The scheduling order (schedule_order.hpp): the packed radix sort gives the same order
// as the comparison sort, for queues whose keys fit in 64 bits and for those that do not.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "src/schedule_order.hpp"
#include "src/schedule_pass.hpp"

namespace tessel::scheduler::detail {
namespace {

struct Shape {
  int priorities = 4;        // Distinct priorities (0: every job -5..5 at random).
  int fair_shares = 1;       // Distinct fair-share factors.
  int usages = 1;            // Distinct user usages.
  bool guarantees = false;   // Some jobs within their guarantee.
  int64_t seq_base = 0;      // First sequence number.
  int64_t seq_step = 1;      // Between jobs' sequence numbers (0: all equal).
  int ids = 0;               // Distinct ids (0: each its own).
  bool odd_doubles = false;  // NaN, -0.0, infinities among the doubles.
};

std::vector<PendingJob> queue_of(const Shape& s, size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  auto pick = [&](int k) { return std::uniform_int_distribution<int>(0, std::max(k, 1) - 1)(rng); };
  const double odd[] = {std::numeric_limits<double>::quiet_NaN(), -0.0, 0.0, std::numeric_limits<double>::infinity(),
                        -std::numeric_limits<double>::infinity(), -1.5};
  std::vector<PendingJob> q(n);
  for (size_t i = 0; i < n; ++i) {
    PendingJob& j = q[i];
    j.id = "j" + std::to_string(s.ids > 0 ? pick(s.ids) : static_cast<int>(i));
    j.priority = s.priorities > 0 ? pick(s.priorities) * 7 - 3 : pick(11) - 5;
    j.fair_share = s.odd_doubles && pick(3) == 0 ? odd[pick(6)] : 0.3 + 0.01 * pick(s.fair_shares);
    j.user_usage = s.odd_doubles && pick(3) == 0 ? odd[pick(6)] : 1.0 * pick(s.usages);
    j.within_guarantee = s.guarantees && pick(2) == 0;
    j.seq = s.seq_base + s.seq_step * static_cast<int64_t>(pick(static_cast<int>(n)));
  }
  return q;
}

std::vector<SortKey> keys_of(const std::vector<PendingJob>& q) {
  auto ordered = [](double x) { return std::isnan(x) ? 0.0 : x; };
  std::vector<SortKey> keys;
  for (size_t i = 0; i < q.size(); ++i)
    keys.push_back(SortKey{q[i].priority, q[i].within_guarantee, ordered(q[i].fair_share), ordered(q[i].user_usage),
                           q[i].seq, static_cast<uint32_t>(i)});
  return keys;
}

void expect_same_order(const Shape& s, size_t n, uint32_t seed) {
  const auto q = queue_of(s, n, seed);
  const auto keys = keys_of(q);
  OrderBuffers buffers;
  EXPECT_EQ(order_by_keys(keys, q, buffers), order_by_comparison(keys, q)) << "seed " << seed << ", " << n << " jobs";
}

TEST(SchedulingOrder, PackedSortMatchesComparisonSort) {
  for (uint32_t seed = 1; seed <= 20; ++seed) {
    for (size_t n : {0u, 1u, 2u, 3u, 17u, 1000u, 5000u}) {
      expect_same_order(Shape{}, n, seed);                                 // Priorities and sequence.
      expect_same_order(Shape{0, 1, 1, true, -40, 3, 0, false}, n, seed);  // Negative priorities and seq.
      expect_same_order(Shape{4, 1, 1, false, 5, 0, 50, false}, n, seed);  // Equal keys: by id, then index.
      expect_same_order(Shape{2, 3, 5, true, 0, 1, 0, false}, n, seed);    // Few fair shares (wide: fallback).
      expect_same_order(Shape{4, 1, 1, false, 0, 1, 0, true}, n, seed);    // NaN, -0.0, infinities.
      expect_same_order(Shape{4, 2, 2, true, 0, 0, 30, true}, n, seed);    // All of it, with ties.
    }
  }
}

TEST(SchedulingOrder, ManyDistinctFairSharesByRankOrComparison) {
  for (uint32_t seed = 1; seed <= 3; ++seed) {
    expect_same_order(Shape{4, 3000, 500, true, 0, 1, 0, false}, 6000, seed);    // By rank (12 and 9 bits).
    expect_same_order(Shape{4, 20000, 50, false, 0, 1, 0, false}, 20000, seed);  // Over 4,096: compared.
    expect_same_order(Shape{4, 50, 20000, false, 0, 1, 0, true}, 20000, seed);   // Usages compared.
  }
}

TEST(SchedulingOrder, ExtremeSequenceNumbersFallBack) {
  Shape s;
  s.seq_base = std::numeric_limits<int64_t>::min() + 1;
  s.seq_step = std::numeric_limits<int64_t>::max() / 4000;
  for (uint32_t seed = 1; seed <= 5; ++seed) expect_same_order(s, 2000, seed);
}

}  // namespace
}  // namespace tessel::scheduler::detail
