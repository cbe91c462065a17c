#include "group_masks.hpp"

#include <array>
#include <utility>

namespace tessel::scheduler::masks {
namespace {

struct Fit {
  Mask group = 0;
  int block = 0;
};

Mask block_mask(int start, int size) { return ((Mask{1} << size) - 1) << start; }

Fit compute_fit(Mask free, int size, int slots = kGaudiSlots) {
  Fit best;
  for (int start = 0; start + size <= slots; start += size) {
    Mask blk = block_mask(start, size);
    if ((free & blk) != blk) continue;
    int k = size;
    while (k < slots) {
      int parent_start = start & ~(2 * k - 1);
      Mask parent = block_mask(parent_start, 2 * k);
      if ((free & parent) != parent) break;
      k *= 2;
    }
    if (best.block == 0 || k < best.block) best = Fit{blk, k};
  }
  return best;
}

// fits[size_log][free & 0xFF]
using Table = std::array<std::array<Fit, 256>, 4>;

const Table& table() {
  static const Table t = [] {
    Table out{};
    for (int lg = 0; lg < 4; ++lg)
      for (Mask m = 0; m < 256; ++m) out[lg][m] = compute_fit(m, 1 << lg);
    return out;
  }();
  return t;
}

}  // namespace

int size_log(int size) {
  switch (size) {
    case 1: return 0;
    case 2: return 1;
    case 4: return 2;
    case 8: return 3;
    case 16: return 4;  // Neuron only.
    default: return -1;
  }
}

Mask gaudi_best_group(Mask free, int size) {
  int lg = size_log(size);
  return lg < 0 || lg > 3 ? 0 : table()[lg][free & kGaudiAll].group;
}

int gaudi_fit_block(Mask free, int size) {
  int lg = size_log(size);
  return lg < 0 || lg > 3 ? 0 : table()[lg][free & kGaudiAll].block;
}

std::vector<Mask> gaudi_groups(Mask free, int size) {
  std::vector<Mask> out;
  for_each_gaudi_group(free, size, [&](Mask g) { out.push_back(g); });
  return out;
}

Mask neuron_best_group(Mask free, int size) {
  return neuron_size(size) ? compute_fit(free & kNeuronAll, size, kNeuronSlots).group : 0;
}

int neuron_fit_block(Mask free, int size) {
  return neuron_size(size) ? compute_fit(free & kNeuronAll, size, kNeuronSlots).block : 0;
}

namespace {

// The shortest run of adjacent set bits of `free` (within the ring) at least `size`
// long: {start, length}, or {0, 0}.
std::pair<int, int> shortest_run(Mask free, int size) {
  std::pair<int, int> best{0, 0};
  int slot = 0;
  while (slot < kRingSlots) {
    if ((free >> slot & 1) == 0) {
      ++slot;
      continue;
    }
    const int start = slot;
    while (slot < kRingSlots && (free >> slot & 1) != 0) ++slot;
    const int length = slot - start;
    if (length >= size && (best.second == 0 || length < best.second)) best = {start, length};
  }
  return best;
}

}  // namespace

int ring_fit_run(Mask free, int size) {
  if (size < 1 || size > kRingSlots) return 0;
  return shortest_run(free, size).second;
}

Mask ring_best_group(Mask free, int size) {
  if (size < 1 || size > kRingSlots) return 0;
  const auto [start, length] = shortest_run(free, size);
  return length == 0 ? 0 : ((Mask{1} << size) - 1) << start;
}

Mask lowest_bits(Mask free, int size) {
  if (size <= 0 || popcount(free) < size) return 0;
  Mask out = 0;
  for (int i = 0; i < size; ++i) {
    Mask low = free & (~free + 1);
    out |= low;
    free &= ~low;
  }
  return out;
}

Mask numa_half_first(Mask free, int size) {
  constexpr Mask kHalves[] = {0x0F, 0xF0};
  Mask best_half = 0;
  for (Mask half : kHalves) {
    const int n = popcount(free & half);
    if (size <= 0 || n < size) continue;
    if (best_half == 0 || n < popcount(free & best_half)) best_half = half;
  }
  return best_half != 0 ? lowest_bits(free & best_half, size) : lowest_bits(free, size);
}

std::vector<int> slots(Mask m) {
  std::vector<int> out;
  while (m != 0) {
    out.push_back(__builtin_ctz(m));
    m &= m - 1;
  }
  return out;
}

}  // namespace tessel::scheduler::masks
