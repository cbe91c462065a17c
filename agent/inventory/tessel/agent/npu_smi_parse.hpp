#pragma once
// `npu-smi info` output (Huawei Ascend) -> devices. Pure.
//
// npu-smi prints text only: a banner row with the version, then one block per NPU
// between `+===+` or `+---+` rules. A block is an NPU row followed by one row per chip:
//   | 0     910B3      | OK            | 93.2     37          0    / 0       |   NPU row
//   | 0                | 0000:C1:00.0  | 0        0    / 0    3161 / 65536  |   chip row
// When the header names a "Device" column beside "Chip" (310-class cards with several
// chips per NPU), a chip row's second number is the chip's logical device id; otherwise
// the NPU id is the device id. The process table that follows the blocks is not read. Fields read:
//   Version (banner)               -> driver_version
//   NPU row: Name                  -> model (as printed: "910B3", "310")
//            Health                -> healthy: OK and Warning (a minor alarm) are
//                                     healthy; anything else (Alarm, Critical, ...) is
//                                     not, with health_reason "npu-smi health: Alarm"
//            Power(W), Temp(C)     -> power_w (rounded), temperature_c ("NA" -> nullopt)
//   chip row: Device or NPU id     -> index and module_id (the logical id that
//                                     ASCEND_RT_VISIBLE_DEVICES takes)
//            Bus-Id                -> bus_id, and uuid "NPU-<bus id in lower case>"
//                                     (npu-smi info prints no serial; the PCI address is
//                                     the card's stable name on a node)
//            AICore(%)             -> utilization_pct
//            the last "used / total" pair (HBM when printed, else Memory-Usage, MB)
//                                  -> memory_used_mib, memory_total_mib

#include <string>
#include <string_view>
#include <vector>

#include "tessel/agent/smi_parse.hpp"
#include "tessel/base/result.hpp"

namespace tessel::agent::ascend {

// The arguments the inventory runs npu-smi with.
const std::vector<std::string>& info_args();

// Errors say what is wrong where: "npu-smi: no device table", "npu-smi line 9: chip row
// before any NPU row", "npu-smi line 7: duplicate device 3". A table with no NPU rows
// gives no devices; more than 64 devices is an error. Devices come sorted by index.
Result<smi::ParsedDevices> parse_npu_smi_info(std::string_view text);

}  // namespace tessel::agent::ascend
