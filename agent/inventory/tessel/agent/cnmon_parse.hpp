#pragma once
// `cnmon info -e -m -u -j` output (Cambricon MLU) -> devices. Pure.
//
// cnmon writes its JSON to the file cnmon_info.json in its working directory, not to
// stdout (cnmon_inventory.hpp runs it where it can read and delete that file). Shape:
// {"CnmonInfo": [CARD, ...]}, CARD = {"CardNum": 0, "ProductName": "MLU370-X8",
// "UUID": ..., "PhysicalMemUsage": {"Total": 24576, "Used": 0} (MiB),
// "Temperature": {"Chip": 35}, "Utilization": {"MLUAverage": 0},
// "PCI": {"DomainID": "0000", "Bus": "3b", "Device": "00", "Function": "0"}}.
// No verbatim real file was found, so the reader is tolerant: a number may come as a JSON
// number or as a string with a unit after it ("24576 MiB", "35 C", "0 %"). Fields read:
//   CardNum            -> index and module_id (required, 0..1023, unique)
//   ProductName, UUID  -> model, uuid
//   PCI                -> bus_id "<DomainID>:<Bus>:<Device>.<Function>" when all four are there
//   PhysicalMemUsage   -> memory_total_mib / memory_used_mib
//   Temperature.Chip, Utilization.MLUAverage -> temperature_c, utilization_pct
// A reading that is not a number is left out; a text field that is not a printable
// string is an error. cnmon's query reports no health: every card is healthy.
#include <string>
#include <string_view>
#include <vector>

#include "tessel/agent/smi_parse.hpp"
#include "tessel/base/result.hpp"

namespace tessel::agent::cambricon {

// The arguments the inventory runs cnmon with: info -e -m -u -j (ECC, memory,
// utilization, JSON file).
const std::vector<std::string>& info_args();

// The file cnmon info -j writes into its working directory.
inline constexpr const char* kInfoFile = "cnmon_info.json";

// Errors say what is wrong where: "cnmon: not JSON", "cnmon: expected {\"CnmonInfo\":
// [...]}", "cnmon CnmonInfo[1].CardNum: must be an integer 0..1023", "cnmon: duplicate
// CardNum 3". An empty list gives no devices; more than 64 is an error. Devices come
// sorted by index.
Result<smi::ParsedDevices> parse_cnmon_info(std::string_view text);

}  // namespace tessel::agent::cambricon
