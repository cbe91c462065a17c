#pragma once
// `xpu-smi discovery -j` output (Intel Data Center GPU Max / Flex) -> devices. Pure.
//
// Shape: {"device_list": [DEVICE, ...]}, DEVICE = {"device_id": N, "device_name": ...,
// "pci_bdf_address": ..., "uuid": ..., "device_function_type": "physical"|"virtual", ...}.
// When Level Zero cannot start, xpu-smi prints {"error": "..."} instead. Fields read:
//   device_id              -> index and module_id (required, 0..1023, unique)
//   device_name            -> model, as printed ("Intel(R) Data Center GPU Max 1550")
//   pci_bdf_address        -> bus_id
//   uuid                   -> uuid (it carries the PCI bus, so it is unique on a node)
//   device_function_type   -> on an SR-IOV host that lists both, the virtual functions
//                             are left out: a job gets whole cards (physical functions)
// One device is one card: Tessel runs Level Zero in COMPOSITE mode (device_env.hpp), where
// a card with two tiles is one root device. discovery -j prints no memory size, serial,
// telemetry or driver version: those stay empty here (the inventory reads telemetry
// with a second call, xpu_smi_dump.hpp), and every card is healthy.
#include <string>
#include <string_view>
#include <vector>

#include "tessel/agent/smi_parse.hpp"
#include "tessel/base/result.hpp"

namespace tessel::agent::intel {

// The arguments the inventory runs xpu-smi with: discovery -j.
const std::vector<std::string>& discovery_args();

// Errors say what is wrong where: "xpu-smi: not JSON", "xpu-smi: Level Zero
// Initialization Error" (xpu-smi's own error object), "xpu-smi device_list[1].device_id:
// must be an integer 0..1023", "xpu-smi: duplicate device_id 3". An empty list gives no
// devices; more than 64 devices is an error. Devices come sorted by index.
Result<smi::ParsedDevices> parse_xpu_smi_discovery(std::string_view text);

}  // namespace tessel::agent::intel
