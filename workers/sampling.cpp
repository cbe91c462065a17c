#include "sampling.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <vector>

namespace tessel::workers {

Status validate(const SamplingParams& p) {
  if (p.max_new_tokens < 0 || p.max_new_tokens > 100000)
    return Error::invalid("must be in [0, 100000]", "max_new_tokens");
  if (!std::isfinite(p.temperature) || p.temperature < 0 || p.temperature > 100)
    return Error::invalid("must be a number in [0, 100]", "temperature");
  if (p.top_k < 0 || p.top_k > 256) return Error::invalid("must be in [0, 256]", "top_k");
  if (!std::isfinite(p.top_p) || p.top_p <= 0 || p.top_p > 1) return Error::invalid("must be in (0, 1]", "top_p");
  return ok_status();
}

std::string field_message(const Error& e) { return e.field.empty() ? e.message : e.field + " " + e.message; }

int choose_token(std::span<const float> logits, const SamplingParams& p, std::mt19937_64& rng) {
  const int n = static_cast<int>(logits.size());
  if (p.temperature == 0.0) {
    return static_cast<int>(std::max_element(logits.begin(), logits.end()) - logits.begin());
  }
  std::vector<int> order(n);
  std::iota(order.begin(), order.end(), 0);
  int keep = (p.top_k > 0 && p.top_k < n) ? static_cast<int>(p.top_k) : n;
  std::partial_sort(order.begin(), order.begin() + keep, order.end(),
                    [&](int a, int b) { return logits[a] > logits[b] || (logits[a] == logits[b] && a < b); });
  const double top = logits[order[0]];
  std::vector<double> weights(keep);
  double total = 0;
  for (int i = 0; i < keep; ++i) {
    weights[i] = std::exp((logits[order[i]] - top) / p.temperature);
    total += weights[i];
  }
  if (p.top_p < 1.0) {  // order[0..keep) is sorted likeliest first (partial_sort)
    double mass = 0;
    int nucleus = 0;
    while (nucleus < keep && mass < p.top_p * total) mass += weights[nucleus++];
    keep = nucleus;
    total = mass;
  }
  // Inverse CDF on a 53-bit uniform; portable across standard libraries.
  const double u = static_cast<double>(rng() >> 11) * (1.0 / 9007199254740992.0) * total;
  double acc = 0;
  for (int i = 0; i < keep; ++i) {
    acc += weights[i];
    if (u < acc) return order[i];
  }
  return order[keep - 1];
}

}  // namespace tessel::workers
