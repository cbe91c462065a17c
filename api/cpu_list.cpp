// CPU lists in the kernel's format ("0-3,8,10-11"): cpuset.cpus, sysfs cpulist files,
// and the inventory's NUMA layout on the wire.
#include <algorithm>
#include <charconv>

#include "tessel/api/inventory.hpp"

namespace tessel::api {

std::string format_cpu_list(const std::vector<int>& cpus) {
  std::string out;
  for (size_t i = 0; i < cpus.size();) {
    size_t j = i;
    while (j + 1 < cpus.size() && cpus[j + 1] == cpus[j] + 1) ++j;
    if (!out.empty()) out += ',';
    out += std::to_string(cpus[i]);
    if (j > i) out += '-' + std::to_string(cpus[j]);
    i = j + 1;
  }
  return out;
}

static bool read_cpu(std::string_view s, int& out) {
  if (s.empty()) return false;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), out);
  return ec == std::errc() && end == s.data() + s.size() && out >= 0 && out <= kMaxCpuId;
}

Result<std::vector<int>> parse_cpu_list(const std::string& text) {
  std::string_view s = text;
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.remove_suffix(1);
  std::vector<int> out;
  while (!s.empty()) {
    const size_t comma = s.find(',');
    const std::string_view item = s.substr(0, comma);
    s = comma == std::string_view::npos ? std::string_view() : s.substr(comma + 1);
    const size_t dash = item.find('-');
    int lo = 0, hi = 0;
    if (!read_cpu(item.substr(0, dash), lo) || (dash != std::string_view::npos && !read_cpu(item.substr(dash + 1), hi)))
      return Error::invalid("'" + std::string(item) + "' is not a CPU or range of CPUs 0-" + std::to_string(kMaxCpuId));
    if (dash == std::string_view::npos) hi = lo;
    if (hi < lo) return Error::invalid("'" + std::string(item) + "': range ends before it starts");
    for (int c = lo; c <= hi; ++c) out.push_back(c);
    if (out.size() > static_cast<size_t>(kMaxCpuId) + 1) return Error::invalid("more CPUs than there can be");
  }
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

}  // namespace tessel::api
