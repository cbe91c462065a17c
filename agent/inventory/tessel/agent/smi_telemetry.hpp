#pragma once
// Live readings of a vendor's cards that come from a second call (amd-smi metric,
// xpu-smi dump), and putting them on the devices the inventory call listed.

#include <cstdint>
#include <optional>
#include <vector>

#include "tessel/api/inventory.hpp"

namespace tessel::agent::smi {

// One card's readings, named by the index the inventory call gave it. nullopt: the
// tool printed N/A, or nothing Tessel could read.
struct Telemetry {
  int index = 0;
  std::optional<int64_t> utilization_pct;
  std::optional<int64_t> temperature_c;
  std::optional<int64_t> power_w;
  std::optional<int64_t> memory_used_mib;

  bool operator==(const Telemetry&) const = default;
};

// Sets the four telemetry fields of each device from the reading of its index.
// Devices without a reading, and readings of no listed device, are left alone: the
// two calls are not atomic, and a card may come or go between them.
void merge_telemetry(const std::vector<Telemetry>& readings, std::vector<api::Device>& devices);

}  // namespace tessel::agent::smi
