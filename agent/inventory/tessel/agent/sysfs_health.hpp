#pragma once
// Device health from the Habana driver's sysfs files.

#include <filesystem>
#include <vector>

#include "tessel/api/inventory.hpp"

namespace tessel::agent {

// For each device whose <sysfs_root>/class/accel/accel<index>/device/status exists,
// marks it unhealthy unless the file (trimmed) reads "operational"; health_reason is
// `sysfs status "in reset"` (or `sysfs status unreadable: ...`). Devices without the
// file are left as they are. Reads the files afresh on every call, so a card that
// recovers is healthy again on the next read.
void apply_sysfs_health(const std::filesystem::path& sysfs_root, std::vector<api::Device>& devices);

}  // namespace tessel::agent
