#include "tessel/agent/tpu_pci.hpp"

#include <algorithm>
#include <optional>
#include <set>

#include "tessel/base/log_safe.hpp"

namespace tessel::agent::tpu {

namespace {

constexpr size_t kMaxChips = 64;    // What the inventory's wire format carries.
constexpr size_t kMaxAddress = 59;  // "TPU-" + address fits the 64 bytes of bus_id and uuid.

struct Chip {
  unsigned device_id;
  const char* model;
  int64_t hbm_mib;
};

constexpr Chip kChips[] = {
    {0x005e, "TPU v4", int64_t{32} * 1024},
    {0x0062, "TPU v5p", int64_t{95} * 1024},
    {0x0063, "TPU v5e", int64_t{16} * 1024},
    {0x006f, "TPU v6e", int64_t{32} * 1024},
};

// "0x1ae0\n" -> 0x1ae0; nullopt for anything but 0x and 1..4 hex digits (spaces and a
// newline around them allowed).
std::optional<unsigned> pci_id(const std::string& s) {
  size_t b = s.find_first_not_of(" \t\r\n");
  size_t e = s.find_last_not_of(" \t\r\n");
  if (b == std::string::npos || e - b + 1 < 3 || e - b + 1 > 6) return std::nullopt;
  if (s[b] != '0' || (s[b + 1] != 'x' && s[b + 1] != 'X')) return std::nullopt;
  unsigned v = 0;
  for (size_t i = b + 2; i <= e; ++i) {
    const char c = s[i];
    int d = -1;
    if (c >= '0' && c <= '9') d = c - '0';
    if (c >= 'a' && c <= 'f') d = c - 'a' + 10;
    if (c >= 'A' && c <= 'F') d = c - 'A' + 10;
    if (d < 0) return std::nullopt;
    v = v * 16 + static_cast<unsigned>(d);
  }
  return v;
}

}  // namespace

Result<smi::ParsedDevices> tpu_chips(const std::vector<PciFunction>& functions) {
  std::vector<std::pair<std::string, const Chip*>> found;
  std::set<std::string> seen;
  for (const PciFunction& f : functions) {
    if (pci_id(f.vendor) != 0x1ae0u) continue;
    auto device = pci_id(f.device);
    if (!device) continue;
    auto chip =
        std::find_if(std::begin(kChips), std::end(kChips), [&](const Chip& c) { return c.device_id == *device; });
    if (chip == std::end(kChips)) continue;
    if (f.address.empty() || f.address.size() > kMaxAddress || !printable_ascii(f.address) ||
        f.address.find(' ') != std::string::npos)
      continue;
    if (!seen.insert(f.address).second) continue;
    found.emplace_back(f.address, &*chip);
  }
  if (found.size() > kMaxChips) return Error{"TPU: more than " + std::to_string(kMaxChips) + " chips"};
  std::sort(found.begin(), found.end());
  smi::ParsedDevices out;
  for (size_t i = 0; i < found.size(); ++i) {
    api::Device d;
    d.index = d.module_id = static_cast<int>(i);
    d.bus_id = found[i].first;
    d.uuid = "TPU-" + found[i].first;
    d.model = found[i].second->model;
    d.memory_total_mib = found[i].second->hbm_mib;
    out.devices.push_back(std::move(d));
  }
  return out;
}

}  // namespace tessel::agent::tpu
