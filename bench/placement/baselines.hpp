#pragma once
// Baseline placers for the fragmentation comparison: Gaudi nodes of 8 cards, one
// free mask per node, valid groups only. Not part of the product.

#include <cstdint>
#include <optional>
#include <random>
#include <vector>

namespace tessel::bench {

struct BaselineChoice {
  int node = 0;
  uint32_t group = 0;
};

class BaselinePlacer {
 public:
  enum class Policy { first_fit, random_fit };
  BaselinePlacer(Policy policy, int nodes, uint32_t seed);

  // A free valid group of `size` cards, or nullopt; does not take it.
  std::optional<BaselineChoice> find(int size);
  void take(const BaselineChoice& c);
  void give_back(const BaselineChoice& c);
  int free_cards() const { return free_cards_; }

 private:
  Policy policy_;
  std::vector<uint32_t> free_;
  std::mt19937 rng_;
  int free_cards_ = 0;
};

}  // namespace tessel::bench
