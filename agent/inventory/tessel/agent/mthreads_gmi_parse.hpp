#pragma once
// `mthreads-gmi -q -j` output (Moore Threads MTT S-series GPUs) -> devices. Pure.
//
// Shape: {"Driver Version": "3.3.5-server", "Attached GPUs": "8", "GPU": [GPU, ...]},
// GPU = {"Index": "0", "Product Name": ..., "GPU UUID": ..., "Serial Number": ...,
// "PCI": {"Bus ID": ...}, "FB Memory Usage": {"Total": "81920MiB", "Used": "0MiB"},
// "Utilization": {"Gpu": "0%"}, "Temperature": {"GPU Current Temp": "27C"},
// "Power Readings": {"Power Draw ": "96.66W"}}. Values are strings carrying their units,
// and the power key ends in a space (matched after trimming). Fields read:
//   Index                        -> index and module_id (required, "0".."1023" or an integer, unique)
//   Product Name                 -> model
//   GPU UUID / Serial Number     -> uuid / serial
//   PCI.Bus ID                   -> bus_id
//   FB Memory Usage Total/Used   -> memory_total_mib / memory_used_mib (MiB or GiB)
//   Utilization.Gpu, Temperature."GPU Current Temp", Power Readings."Power Draw"
//                                -> utilization_pct, temperature_c, power_w (rounded)
//   Driver Version (top level)   -> driver_version
// Telemetry that is absent or not a number with the expected unit ("N/A") is left out;
// a text field that is not a printable string is an error. mthreads-gmi reports no health:
// every card is healthy.
#include <string>
#include <string_view>
#include <vector>

#include "tessel/agent/smi_parse.hpp"
#include "tessel/base/result.hpp"

namespace tessel::agent::mthreads {

// The arguments the inventory runs mthreads-gmi with: -q -j (--query --json).
const std::vector<std::string>& query_args();

// Errors say what is wrong where: "mthreads-gmi: not JSON", "mthreads-gmi: expected
// {\"GPU\": [...]}", "mthreads-gmi GPU[1].Index: must be an integer 0..1023",
// "mthreads-gmi: duplicate Index 3". No "GPU" list with "Attached GPUs": "0" gives no
// devices; more than 64 devices is an error. Devices come sorted by index.
Result<smi::ParsedDevices> parse_mthreads_gmi_query(std::string_view text);

}  // namespace tessel::agent::mthreads
