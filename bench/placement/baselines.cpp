#include "baselines.hpp"

#include <cassert>

#include "src/group_masks.hpp"

namespace tessel::bench {

BaselinePlacer::BaselinePlacer(Policy policy, int nodes, uint32_t seed)
    : policy_(policy), free_(nodes, 0xFF), rng_(seed), free_cards_(nodes * 8) {}

std::optional<BaselineChoice> BaselinePlacer::find(int size) {
  if (policy_ == Policy::first_fit) {
    for (size_t n = 0; n < free_.size(); ++n) {
      uint32_t first = 0;
      scheduler::masks::for_each_gaudi_group(free_[n], size, [&](uint32_t g) {
        if (first == 0) first = g;
      });
      if (first != 0) return BaselineChoice{static_cast<int>(n), first};
    }
    return std::nullopt;
  }
  std::vector<BaselineChoice> options;
  for (size_t n = 0; n < free_.size(); ++n)
    scheduler::masks::for_each_gaudi_group(free_[n], size, [&](uint32_t g) {
      options.push_back({static_cast<int>(n), g});
    });
  if (options.empty()) return std::nullopt;
  return options[std::uniform_int_distribution<size_t>(0, options.size() - 1)(rng_)];
}

void BaselinePlacer::take(const BaselineChoice& c) {
  assert((free_[c.node] & c.group) == c.group);
  free_[c.node] &= ~c.group;
  free_cards_ -= __builtin_popcount(c.group);
}

void BaselinePlacer::give_back(const BaselineChoice& c) {
  free_[c.node] |= c.group;
  free_cards_ += __builtin_popcount(c.group);
}

}  // namespace tessel::bench
