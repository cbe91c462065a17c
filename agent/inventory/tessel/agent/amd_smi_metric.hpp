#pragma once
// `amd-smi metric --usage --power --temperature --mem-usage --json` output -> the
// cards' live readings. Pure.
//
// The same two shapes as `static` (amd_smi_parse.hpp): {"gpu_data": [GPU, ...]} and the
// older bare [GPU, ...]. A reading is {"value": V, "unit": U}, a bare number, or the
// string "N/A"; V itself may be "N/A". Fields read:
//   gpu                                   -> index (required, 0..1023, unique)
//   usage.gfx_activity (%)                -> utilization_pct
//   power.socket_power (W)                -> power_w; older releases and MI200 parts
//                                            print average_socket_power instead
//   temperature.hotspot (C)               -> temperature_c (the junction, what the
//                                            card throttles on); edge when no hotspot
//   mem_usage.used_vram (MB)              -> memory_used_mib
// A reading that is N/A, missing, negative, carries another unit or is not a number
// is nullopt: one odd sensor must not hide the others. Only a document Tessel cannot
// attribute to cards is an error.

#include <string>
#include <string_view>
#include <vector>

#include "tessel/agent/smi_telemetry.hpp"
#include "tessel/base/result.hpp"

namespace tessel::agent::amd {

// The arguments the inventory runs amd-smi with for readings.
const std::vector<std::string>& metric_args();

// Errors: "amd-smi metric: not JSON", "amd-smi metric: expected a JSON list of GPUs or
// {\"gpu_data\": [...]}", "amd-smi metric gpu_data[1].gpu: must be an integer 0..1023",
// "amd-smi metric: duplicate gpu 3", more than 64 GPUs. Readings come sorted by index.
Result<std::vector<smi::Telemetry>> parse_amd_smi_metric(std::string_view text);

}  // namespace tessel::agent::amd
