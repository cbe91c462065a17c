#pragma once
// `amd-smi static --asic --bus --vram --driver --json` output -> devices. Pure.
//
// Two shapes: the newer {"gpu_data": [GPU, ...]} and the older bare [GPU, ...], where
// GPU is {"gpu": N, "asic": {...}, "bus": {...}, "vram": {...}, "driver": {...}, ...}.
// A reading amd-smi could not take is the string "N/A". Values are {"value": V,
// "unit": U} in newer releases and bare numbers in older ones. Fields read:
//   gpu                      -> index and module_id (required, 0..1023, unique)
//   asic.market_name         -> model (N/A -> "")
//   asic.asic_serial         -> serial as printed ("0x7EF570DB1B346018"), and uuid =
//                               rocr_uuid(serial) when the card has a serial
//   bus.bdf                  -> bus_id
//   vram.size (MB)           -> memory_total_mib
//   driver.version           -> driver_version (the first GPU's; cut at 128 bytes)
// Other keys are ignored. Telemetry other than memory is not in `static`: nullopt.

#include <string>
#include <string_view>
#include <vector>

#include "tessel/agent/smi_parse.hpp"
#include "tessel/base/result.hpp"

namespace tessel::agent::amd {

// The arguments the inventory runs amd-smi with.
const std::vector<std::string>& static_args();

// Errors say what is wrong where: "amd-smi: not JSON: ...", "amd-smi gpu_data[2].gpu:
// must be an integer 0..1023", "amd-smi: duplicate gpu 3". An empty list gives no devices;
// more than 64 GPUs is an error. Devices come sorted by index.
Result<smi::ParsedDevices> parse_amd_smi_static(std::string_view text);

// The id ROCR_VISIBLE_DEVICES takes for a card: "GPU-" + the asic serial in lower-case
// hex ("0x7EF570DB1B346018" -> "GPU-7ef570db1b346018", as rocminfo prints it). "" when
// the serial is N/A, zero (consumer parts), or not 1..16 hex digits. Not amd-smi's
// own "uuid" field, which ROCr does not accept.
std::string rocr_uuid(std::string_view asic_serial);

}  // namespace tessel::agent::amd
