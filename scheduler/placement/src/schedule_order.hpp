#pragma once
// The order of a pass's queue (SchedulePass::scheduling_order()): its sort keys sorted
// by SortKey::compare(), then by id, then by queue index.

#include <cstdint>
#include <vector>

#include "tessel/scheduler/allocator.hpp"

namespace tessel::scheduler::detail {

struct SortKey;

// Scratch memory for order_by_keys(), kept between passes.
struct OrderBuffers {
  std::vector<uint64_t> packed;
  std::vector<uint64_t> spare;
};

// The queue indexes of `keys` (keys[i].index == i) in scheduling order. When the
// fields that differ between the keys fit in 64 bits with the index (priorities,
// sequence numbers, and fair-share factors and user usages by the rank of their value
// when those are up to 4,096 distinct doubles), each key is packed into one integer,
// order-preserving, and radix-sorted; ties of the packed keys are then ordered by id
// and index. Otherwise a comparison sort. Both give the same order
// (tests/placement/order_test.cpp).
std::vector<uint32_t> order_by_keys(const std::vector<SortKey>& keys, const std::vector<PendingJob>& queue,
                                    OrderBuffers& buffers);
// The comparison sort alone, for the tests to compare with.
std::vector<uint32_t> order_by_comparison(std::vector<SortKey> keys, const std::vector<PendingJob>& queue);

}  // namespace tessel::scheduler::detail
