#pragma once
// `rocm-smi --showid --showuniqueid --showproductname --showbus --json` output (AMD, the
// legacy tool amd-smi replaces) -> devices. Pure. Read only when amd-smi is not installed.
//
// Shape: {"card0": {"GPU ID": "0x738c", "Unique ID": "0x7ef570db1b346018", "Card SKU":
// "D34304", "Card series": ..., "PCI Bus": "0000:63:00.0", ...}, "card1": ..., "system":
// {...}}. Keys other than card<N> are ignored. Fields read:
//   card<N>                -> index and module_id (0..1023)
//   Unique ID              -> uuid GPU-<hex, lower case, no 0x>: the ROCr id
//                             ROCR_VISIBLE_DEVICES takes; "" when absent or not hex
//   Card series, else Card SKU, else GPU ID -> model
//   PCI Bus                -> bus_id
//   VRAM Total Memory (B), VRAM Total Used Memory (B), GPU use (%),
//   Temperature (Sensor junction) (C), Average Graphics Package Power (W) -> telemetry
//                             when printed (other rocm-smi options), as numbers in strings
// Tolerant: a field that is absent, not a string or not a number is left empty; only a
// document that is not a JSON object, or one without any card, is an error.
#include <string>
#include <string_view>
#include <vector>

#include "tessel/agent/smi_parse.hpp"
#include "tessel/base/result.hpp"

namespace tessel::agent::amd {

// The arguments the fallback runs rocm-smi with.
const std::vector<std::string>& rocm_smi_args();

// Errors: "rocm-smi: not JSON", "rocm-smi: expected {\"card0\": {...}}" (no card<N> key),
// "rocm-smi: more than 64 devices". Devices come sorted by index.
Result<smi::ParsedDevices> parse_rocm_smi(std::string_view text);

}  // namespace tessel::agent::amd
