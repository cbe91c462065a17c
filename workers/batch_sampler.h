// Batch sampling over a byte corpus split into contiguous shards.
// Shard s of S covers bytes [s*N/S, (s+1)*N/S). Example start offsets are a
// pure function of (seed, step, shard), so a resumed run sees the same
// batches and one process that owns shards {0,1} sees exactly the examples
// two ranks owning one shard each see. No LibTorch here.
#pragma once

#include <cstdint>
#include <vector>

#include "tessel/base/result.hpp"

namespace tessel::workers {

struct ShardRange {
  int64_t begin = 0;
  int64_t end = 0;  // exclusive
};

ShardRange shard_range(int64_t corpus_bytes, int64_t shard, int64_t shard_count);

// Checks every shard can hold one example of context+1 bytes.
Status check_shards(int64_t corpus_bytes, int64_t shard_count, int64_t context);

// `count` example start offsets within `shard`, each with context+1 bytes
// available. Requires check_shards() to have passed.
std::vector<int64_t> sample_offsets(int64_t corpus_bytes, int64_t shard, int64_t shard_count, int64_t context,
                                    int64_t count, uint64_t seed, int64_t step);

}  // namespace tessel::workers
