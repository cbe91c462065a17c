#include "batch_sampler.h"

namespace tessel::workers {
namespace {

uint64_t splitmix64(uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

}  // namespace

ShardRange shard_range(int64_t n, int64_t shard, int64_t count) { return {n * shard / count, n * (shard + 1) / count}; }

Status check_shards(int64_t n, int64_t count, int64_t context) {
  for (int64_t s = 0; s < count; ++s) {
    auto r = shard_range(n, s, count);
    if (r.end - r.begin < context + 1)
      return Error::invalid("--data has " + std::to_string(n) + " bytes; each of " + std::to_string(count) +
                                " shard(s) needs at least --context+1 = " + std::to_string(context + 1),
                            "data");
  }
  return ok_status();
}

std::vector<int64_t> sample_offsets(int64_t n, int64_t shard, int64_t shard_count, int64_t context, int64_t count,
                                    uint64_t seed, int64_t step) {
  const auto r = shard_range(n, shard, shard_count);
  const uint64_t choices = static_cast<uint64_t>(r.end - r.begin - context);  // >= 1
  uint64_t state =
      splitmix64(seed ^ splitmix64(static_cast<uint64_t>(step) ^ splitmix64(static_cast<uint64_t>(shard))));
  std::vector<int64_t> out(static_cast<size_t>(count));
  for (auto& o : out) {
    state = splitmix64(state);
    o = r.begin + static_cast<int64_t>(state % choices);
  }
  return out;
}

}  // namespace tessel::workers
