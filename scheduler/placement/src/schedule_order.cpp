#include "schedule_order.hpp"

#include <algorithm>
#include <array>
#include <bit>
#include <cmath>
#include <cstring>
#include <functional>
#include <string_view>
#include <utility>

#include "schedule_pass.hpp"

namespace tessel::scheduler::detail {
namespace {

// std::sort needs a strict weak order, which a NaN breaks: it sorts as 0.
double ordered(double x) { return std::isnan(x) ? 0.0 : x; }

// An unsigned integer in the order of the doubles, equal for equal doubles (-0.0 and
// NaN as 0.0, as ordered() has them).
uint64_t sortable(double x) {
  if (std::isnan(x) || x == 0.0) x = 0.0;
  uint64_t u = 0;
  std::memcpy(&u, &x, sizeof u);
  return (u >> 63) != 0 ? ~u : u | (uint64_t{1} << 63);
}

// Bits that hold 0..range.
int width(uint64_t range) { return range == 0 ? 0 : 64 - std::countl_zero(range); }

// One field of the packed key: its values as 0..range, in the order the field sorts.
struct Field {
  uint64_t low = ~uint64_t{0};
  uint64_t high = 0;
  bool descending = false;
  void see(uint64_t v) {
    low = std::min(low, v);
    high = std::max(high, v);
  }
  uint64_t value(uint64_t v) const { return descending ? high - v : v - low; }
  int bits() const { return low > high ? 0 : width(high - low); }
};

// The fields of a SortKey as unsigned integers in their own order (ascending).
std::array<uint64_t, 5> raw(const SortKey& k) {
  return {static_cast<uint64_t>(int64_t{k.priority}) ^ (uint64_t{1} << 63), k.within_guarantee ? 0u : 1u,
          sortable(k.fair_share), sortable(k.user_usage), static_cast<uint64_t>(k.seq) ^ (uint64_t{1} << 63)};
}

// The distinct values of a field, up to kMost, so that a field of few values far apart
// (fair-share factors and usages: doubles) is packed by its values' ranks instead.
class Ranks {
 public:
  static constexpr size_t kMost = 4096;
  // Adds `v`; false once more than kMost values were added.
  bool add(uint64_t v) {
    if (full_) return false;
    if (!values_.empty() && v == last_) return true;
    last_ = v;
    size_t s = slot(v);
    for (; rank_[s] != kEmpty; s = (s + 1) & kMask)
      if (key_[s] == v) return true;
    if (values_.size() == kMost) {
      full_ = true;
      return false;
    }
    key_[s] = v;
    rank_[s] = 0;
    values_.push_back(v);
    return true;
  }
  bool full() const { return full_; }
  size_t count() const { return values_.size(); }
  // After the last add(): numbers the values in ascending order for of().
  void number() {
    std::sort(values_.begin(), values_.end());
    for (size_t i = 0; i < values_.size(); ++i) rank_[find(values_[i])] = static_cast<uint32_t>(i);
  }
  uint64_t of(uint64_t v) const { return rank_[find(v)]; }

 private:
  static constexpr size_t kSlots = 2 * kMost;  // A power of 2.
  static constexpr size_t kMask = kSlots - 1;
  static constexpr uint32_t kEmpty = ~uint32_t{0};
  static size_t slot(uint64_t v) { return static_cast<size_t>((v * 0x9E3779B97F4A7C15u) >> 51) & kMask; }
  size_t find(uint64_t v) const {
    size_t s = slot(v);
    while (key_[s] != v || rank_[s] == kEmpty) s = (s + 1) & kMask;
    return s;
  }
  std::vector<uint64_t> key_ = std::vector<uint64_t>(kSlots);
  std::vector<uint32_t> rank_ = std::vector<uint32_t>(kSlots, kEmpty);
  std::vector<uint64_t> values_;
  uint64_t last_ = 0;
  bool full_ = false;
};

// Ranks equal keys by id, then index (the comparison sort's tie-breaks).
bool id_before(const std::vector<PendingJob>& queue, uint32_t a, uint32_t b) {
  if (int c = queue[a].id.compare(queue[b].id); c != 0) return c < 0;
  return a < b;
}

// LSD radix sort of `packed` by bits [from, to), stable: 12 bits a round.
void radix_sort(std::vector<uint64_t>& packed, std::vector<uint64_t>& spare, int from, int to) {
  constexpr int kDigit = 12;
  spare.resize(packed.size());
  std::vector<uint32_t> count(size_t{1} << kDigit);
  for (int shift = from; shift < to; shift += kDigit) {
    const uint64_t mask = (uint64_t{1} << std::min(kDigit, to - shift)) - 1;
    std::fill(count.begin(), count.end(), 0);
    for (uint64_t k : packed) ++count[(k >> shift) & mask];
    uint32_t sum = 0;
    for (uint32_t& c : count) sum += std::exchange(c, sum);
    for (uint64_t k : packed) spare[count[(k >> shift) & mask]++] = k;
    packed.swap(spare);
  }
}

}  // namespace

std::vector<uint32_t> order_by_comparison(std::vector<SortKey> keys, const std::vector<PendingJob>& queue) {
  // Sorted as compact keys, not pointers: with 100,000 jobs a comparator that follows
  // pointers into the queue spends most of the sort on cache misses. The queue index
  // breaks the last tie (the same id twice), so the order is total and std::sort's
  // result is the stable one.
  std::sort(keys.begin(), keys.end(), [&](const SortKey& a, const SortKey& b) {
    if (auto c = a.compare(b); c != 0) return c < 0;
    return id_before(queue, a.index, b.index);
  });
  std::vector<uint32_t> order;
  order.reserve(keys.size());
  for (const SortKey& k : keys) order.push_back(k.index);
  return order;
}

std::vector<uint32_t> order_by_keys(const std::vector<SortKey>& keys, const std::vector<PendingJob>& queue,
                                    OrderBuffers& buffers) {
  if (keys.size() < 2) return order_by_comparison(keys, queue);
  std::array<Field, 5> fields;
  fields[0].descending = fields[2].descending = true;  // Priority and fair share: higher first.
  std::array<Ranks, 2> ranks;                          // Of the fair shares and the user usages (fields 2 and 3).
  for (const SortKey& k : keys) {
    const auto r = raw(k);
    for (size_t f = 0; f < fields.size(); ++f) fields[f].see(r[f]);
    ranks[0].add(r[2]);
    ranks[1].add(r[3]);
  }
  const int index_bits = width(keys.size() - 1);
  int bits = index_bits;
  for (const Field& f : fields) bits += f.bits();
  std::array<bool, 2> by_rank{};
  for (size_t d = 0; d < ranks.size() && bits > 64; ++d) {  // Too wide: the doubles by rank.
    Field& f = fields[2 + d];
    const int narrow = ranks[d].full() ? 64 : width(ranks[d].count() - 1);
    if (narrow >= f.bits()) continue;
    ranks[d].number();
    bits -= f.bits() - narrow;
    f.low = 0;
    f.high = ranks[d].count() - 1;
    by_rank[d] = true;
  }
  if (bits > 64) return order_by_comparison(keys, queue);
  std::vector<uint64_t>& packed = buffers.packed;
  packed.clear();
  packed.reserve(keys.size());
  for (const SortKey& k : keys) {  // In queue order: equal packed keys stay by index.
    auto r = raw(k);
    for (size_t d = 0; d < ranks.size(); ++d)
      if (by_rank[d]) r[2 + d] = ranks[d].of(r[2 + d]);
    uint64_t p = 0;
    for (size_t f = 0; f < fields.size(); ++f)
      if (int b = fields[f].bits(); b > 0) p = (p << b) | fields[f].value(r[f]);
    packed.push_back((p << index_bits) | k.index);
  }
  radix_sort(packed, buffers.spare, index_bits, bits);
  std::vector<uint32_t> order(packed.size());
  const uint64_t index_mask = (uint64_t{1} << index_bits) - 1;
  for (size_t i = 0; i < packed.size(); ++i) order[i] = static_cast<uint32_t>(packed[i] & index_mask);
  // Runs of equal keys (above the index bits): by id, then index.
  for (size_t i = 0; i < packed.size();) {
    size_t end = i + 1;
    while (end < packed.size() && (packed[end] >> index_bits) == (packed[i] >> index_bits)) ++end;
    if (end - i > 1)
      std::sort(order.begin() + static_cast<std::ptrdiff_t>(i), order.begin() + static_cast<std::ptrdiff_t>(end),
                [&](uint32_t a, uint32_t b) { return id_before(queue, a, b); });
    i = end;
  }
  return order;
}

std::vector<uint32_t> SchedulePass::scheduling_order(const std::vector<PendingJob>& queue) {
  // One walk over the queue in its own order (memory in sequence): the sort keys and
  // each id's hash; then which ids occur more than once.
  const auto hash_of = std::hash<std::string_view>{};
  std::vector<SortKey>& keys = buffers_.keys;
  keys.clear();
  std::vector<size_t>& id_hash = buffers_.id_hash;
  id_hash.resize(queue.size());
  for (size_t i = 0; i < queue.size(); ++i) {
    const PendingJob& j = queue[i];
    keys.push_back(SortKey{j.priority, j.within_guarantee, ordered(j.fair_share), ordered(j.user_usage), j.seq,
                           static_cast<uint32_t>(i)});
    id_hash[i] = hash_of(j.id);
  }
  std::vector<bool>& repeated = buffers_.repeated;  // Its id occurs again in the queue.
  repeated.assign(queue.size(), false);
  HashSlots ids(buffers_.id_slots, queue.size());
  // The table is megabytes at 100,000 jobs, each insert a cache miss: fetch ahead.
  constexpr size_t kAhead = 16;
  for (size_t i = 0; i < queue.size(); ++i) {
    if (i + kAhead < queue.size()) ids.prefetch(id_hash[i + kAhead]);
    const auto index = static_cast<uint32_t>(i);
    if (auto first = ids.insert(id_hash[i], index, [&](uint32_t other) { return queue[other].id == queue[i].id; })) {
      repeated[*first] = true;
      repeated[i] = true;
    }
  }
  return order_by_keys(keys, queue, buffers_.order);
}

}  // namespace tessel::scheduler::detail
