// Continuous batching's admission and queue policy, as pure arithmetic (no
// LibTorch): a request waits in a queue of at most max_queue requests; before
// each decoding step waiting requests join the batch, oldest first, while it
// has fewer than max_batch; a request that finishes or whose client left
// leaves it between steps. A request arriving at a full queue is refused
// (HTTP 429 with Retry-After).
#pragma once

#include <cstdint>

#include "tessel/base/result.hpp"

namespace tessel::workers {

struct BatchLimits {
  int64_t max_batch = 8;   // sequences decoded together in one forward pass
  int64_t max_queue = 64;  // requests waiting for a place in the batch
};

// invalid_argument naming "max_batch" or "max_queue" (each must be >= 1, and
// at most 1024 and 100000).
Status validate(const BatchLimits& limits);

// Whether one more request may wait.
bool queue_has_room(int64_t waiting, const BatchLimits& limits);

// How many of the waiting requests join a batch of `active` before the next step.
int64_t joiners(int64_t active, int64_t waiting, const BatchLimits& limits);

// Retry-After (seconds) for a refused request: one second per full batch
// queued ahead of it, at least 1, at most 60.
int64_t retry_after_s(int64_t waiting, const BatchLimits& limits);

}  // namespace tessel::workers
