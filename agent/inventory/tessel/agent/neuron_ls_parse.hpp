#pragma once
// `neuron-ls -j` output (AWS Trainium / Inferentia) -> devices. Pure.
//
// Shape: a JSON list, one object per Neuron device:
//   {"neuron_device": 0, "bdf": "cc:00.0", "nc_count": 4, "logical_neuroncore_config": 2,
//    "memory_size": 103079215104, "neuroncore_ids": [0, 1, 2, 3], "connected_to": [...],
//    "instance_type": "trn2.48xlarge", "neuron_processes": [...], ...}
// Fields read:
//   neuron_device      -> index and module_id (required, 0..1023, unique)
//   neuroncore_ids     -> cores: the device's NeuronCore count (logical cores when
//                         logical_neuroncore_config is 2). Device d with c cores must hold
//                         the global ids d*c .. d*c+c-1, the ids NEURON_RT_VISIBLE_CORES
//                         takes; another layout is an error rather than a wrong range
//   nc_count           -> cores when neuroncore_ids is absent (older neuron-ls)
//   bdf                -> bus_id, and uuid "NEURON-<bdf in lower case>" (neuron-ls prints
//                         no serial; the PCI address is the device's stable name on a node)
//   memory_size (B)    -> memory_total_mib
//   instance_type      -> model: the instance family ("trn2.48xlarge" -> "trn2"); "" when
//                         absent (older neuron-ls)
// neuron-ls has no health flag, telemetry or driver version: every device is healthy.
#include <string>
#include <string_view>
#include <vector>

#include "tessel/agent/smi_parse.hpp"
#include "tessel/base/result.hpp"

namespace tessel::agent::neuron {

// The arguments the inventory runs neuron-ls with: -j.
const std::vector<std::string>& list_args();

// Errors say what is wrong where: "neuron-ls: not JSON", "neuron-ls [3].neuroncore_ids:
// must be 12..15 (device 3 of 4 cores)", "neuron-ls: duplicate neuron_device 3". An empty
// list gives no devices; more than 64 devices is an error. Devices come sorted by index.
Result<smi::ParsedDevices> parse_neuron_ls(std::string_view text);

}  // namespace tessel::agent::neuron
