#pragma once
// Bit-mask arithmetic for card groups, one bit per slot (Gaudi: module id,
// NVIDIA: index). Pure functions; the Gaudi ones use tables built once.
//
// Gaudi groups are aligned buddy blocks of 1, 2, 4 or 8 slots within module ids
// 0..7. "Buddy best-fit": among the free groups of the requested size, take the
// one inside the smallest fully free aligned block, so half-used pairs and quads
// are filled before a whole one is broken.

#include <cstdint>
#include <vector>

namespace tessel::scheduler::masks {

using Mask = uint32_t;
inline constexpr int kMaxSlots = 32;
inline constexpr int kGaudiSlots = 8;
inline constexpr Mask kGaudiAll = 0xFF;

// 1 -> 0, 2 -> 1, 4 -> 2, 8 -> 3, 16 -> 4 (Neuron); -1 for any other size.
int size_log(int size);
// Index of a group size in per-size tables: 1..32 -> 0..31; -1 for any other size.
inline int size_index(int size) { return size >= 1 && size <= kMaxSlots ? size - 1 : -1; }

inline int popcount(Mask m) { return __builtin_popcount(m); }

// Gaudi: the buddy best-fit group of `size` cards within `free`, or 0 when none.
Mask gaudi_best_group(Mask free, int size);
// Gaudi: size of the smallest fully free aligned block holding the group that
// gaudi_best_group() returns (size..8), or 0 when no group fits.
int gaudi_fit_block(Mask free, int size);
// Gaudi: the valid groups of `size` within `free`, lowest module id first.
std::vector<Mask> gaudi_groups(Mask free, int size);
// As above without allocating: calls fn(group) for each.
template <class Fn>
void for_each_gaudi_group(Mask free, int size, Fn&& fn) {
  if (size != 1 && size != 2 && size != 4 && size != 8) return;
  const Mask unit = (Mask{1} << size) - 1;
  for (int start = 0; start + size <= kGaudiSlots; start += size) {
    Mask blk = unit << start;
    if ((free & blk) == blk) fn(blk);
  }
}
// Calls fn(slot) for each slot set in `m`, ascending.
template <class Fn>
void for_each_slot(Mask m, Fn&& fn) {
  while (m != 0) {
    fn(__builtin_ctz(m));
    m &= m - 1;
  }
}

inline constexpr int kNeuronSlots = 16;
inline constexpr Mask kNeuronAll = 0xFFFF;

// Neuron: true for 1, 4, 8, 16.
inline bool neuron_size(int size) { return size == 1 || size == 4 || size == 8 || size == 16; }
// Neuron: the best-fit group of `size` devices within `free`, or 0 when none.
Mask neuron_best_group(Mask free, int size);
// Neuron: size of the smallest fully free aligned block (size..16) holding the group
// neuron_best_group() returns, or 0 when no group fits.
int neuron_fit_block(Mask free, int size);
// Neuron: calls fn(group) for each valid group of `size` within `free`, lowest first.
template <class Fn>
void for_each_neuron_group(Mask free, int size, Fn&& fn) {
  if (!neuron_size(size)) return;
  const Mask unit = (Mask{1} << size) - 1;
  for (int start = 0; start + size <= kNeuronSlots; start += size) {
    Mask blk = unit << start;
    if ((free & blk) == blk) fn(blk);
  }
}

// Ring (Inferentia): `size` adjacent slots within 0..15. Best fit: the shortest run of
// adjacent free slots that holds `size`, from its low end, so the rest of the run stays
// one piece; ring_fit_run() is that run's length, 0 when no run holds `size`.
inline constexpr int kRingSlots = 16;
int ring_fit_run(Mask free, int size);
Mask ring_best_group(Mask free, int size);
// Ring: calls fn(group) for each run of `size` adjacent slots within `free`, lowest first.
template <class Fn>
void for_each_ring_group(Mask free, int size, Fn&& fn) {
  if (size < 1 || size > kRingSlots) return;
  const Mask unit = (Mask{1} << size) - 1;
  for (int start = 0; start + size <= kRingSlots; ++start) {
    Mask run = unit << start;
    if ((free & run) == run) fn(run);
  }
}

// NVIDIA: the `size` lowest set bits of `free`, or 0 when fewer are set.
Mask lowest_bits(Mask free, int size);

// Moore Threads (any subset valid, NUMA split 4+4: slots 0-3 and 4-7): a group of up to
// 4 within one NUMA half when one has room, the half with the fewest free slots first
// (the lower on a tie), its lowest free slots; else lowest_bits(free, size).
Mask numa_half_first(Mask free, int size);

// Slots set in `m`, ascending.
std::vector<int> slots(Mask m);

}  // namespace tessel::scheduler::masks
