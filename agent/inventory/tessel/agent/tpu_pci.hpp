#pragma once
// Google Cloud TPU chips from a PCI scan -> devices. Pure.
//
// There is no JSON inventory tool for TPUs (tpu-info prints tables, and its usage
// columns need a running workload), so Tessel reads what tpu-info itself enumerates:
// the PCI functions of vendor 0x1ae0 (Google) whose device id names a TPU chip.
//   0x005e  TPU v4   (32 GiB HBM)     0x0062  TPU v5p  (95 GiB)
//   0x0063  TPU v5e  (16 GiB)         0x006f  TPU v6e  (32 GiB)
// Other 0x1ae0 functions (the gVNIC network card, older v2/v3 chips, 7x) are not counted.
// Chips are numbered 0..n-1 in PCI address order, the order libtpu enumerates them and
// TPU_VISIBLE_CHIPS counts in. A chip's uuid is TPU-<PCI address>, its bus_id the
// address, memory_total_mib its HBM; there is no telemetry, and every chip is healthy.
#include <string>
#include <vector>

#include "tessel/agent/smi_parse.hpp"
#include "tessel/base/result.hpp"

namespace tessel::agent::tpu {

// One PCI function as sysfs shows it: the directory name under bus/pci/devices and the
// contents of its `vendor` and `device` files ("0x1ae0\n").
struct PciFunction {
  std::string address;  // "0000:00:04.0"
  std::string vendor;
  std::string device;
};

// The TPU chips among `functions`. Errors: "TPU: more than 64 chips"; an address that is
// not printable ASCII of at most 59 bytes, or a duplicate, is skipped (it cannot be a
// sysfs name). No chip gives no devices.
Result<smi::ParsedDevices> tpu_chips(const std::vector<PciFunction>& functions);

}  // namespace tessel::agent::tpu
