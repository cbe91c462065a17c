#include "batch_policy.h"

#include <algorithm>

namespace tessel::workers {

Status validate(const BatchLimits& limits) {
  if (limits.max_batch < 1 || limits.max_batch > 1024) return Error::invalid("must be in [1, 1024]", "max_batch");
  if (limits.max_queue < 1 || limits.max_queue > 100000) return Error::invalid("must be in [1, 100000]", "max_queue");
  return ok_status();
}

bool queue_has_room(int64_t waiting, const BatchLimits& limits) { return waiting < limits.max_queue; }

int64_t joiners(int64_t active, int64_t waiting, const BatchLimits& limits) {
  return std::clamp<int64_t>(limits.max_batch - active, 0, std::max<int64_t>(waiting, 0));
}

int64_t retry_after_s(int64_t waiting, const BatchLimits& limits) {
  return std::clamp<int64_t>(waiting / limits.max_batch, 1, 60);
}

}  // namespace tessel::workers
