#pragma once
// `xpu-smi dump -d -1 -m 0,1,3,18 -n 1` output -> the cards' live readings. Pure.
//
// One call covers every card ("-d -1"), where `xpu-smi stats -j` takes one per card.
// The output is CSV: a header row, then one row per card and sample, values padded
// with spaces, "N/A" for a reading the card did not give (utilization needs two
// samples, temperature root or telem read access). Header, then a row:
//   Timestamp, DeviceId, GPU Utilization (%), GPU Power (W),
//     GPU Core Temperature (Celsius Degree), GPU Memory Used (MiB)
//   14:32:57.448,    0, 0.00, 106.60,  N/A, 28.02
// Columns are found by their header (xpu-smi prints them in the order asked; other
// columns are ignored), so output with more or fewer metrics still reads:
//   DeviceId                              -> index (required, 0..1023)
//   GPU Utilization (%)                   -> utilization_pct
//   GPU Power (W)                         -> power_w
//   GPU Core Temperature (...)            -> temperature_c ("(Celsius Degree)" or "(C)")
//   GPU Memory Used (MiB)                 -> memory_used_mib
// Values are rounded. When a card has several rows (-n 2 and up), a later reading
// replaces an earlier one and N/A keeps the earlier one.

#include <string>
#include <string_view>
#include <vector>

#include "tessel/agent/smi_telemetry.hpp"
#include "tessel/base/result.hpp"

namespace tessel::agent::intel {

// The arguments the inventory runs xpu-smi with for readings.
const std::vector<std::string>& dump_args();

// Errors: no header ("xpu-smi dump: no header row with DeviceId", e.g. its "Error:
// Device not found"), a row with another number of cells or a bad DeviceId or value
// ("xpu-smi dump line 3: ..."), more than 64 cards. Readings come sorted by index.
Result<std::vector<smi::Telemetry>> parse_xpu_smi_dump(std::string_view text);

}  // namespace tessel::agent::intel
