#pragma once
// Choosing the vendor tool for `--vendor auto`, and building the matching source.

#include <memory>
#include <string>
#include <vector>

#include "tessel/agent/command_runner.hpp"
#include "tessel/agent/inventory_source.hpp"
#include "tessel/agent/smi_inventory.hpp"
#include "tessel/api/inventory.hpp"
#include "tessel/base/result.hpp"

namespace tessel::agent {

// The vendor of the first tool that resolves to an executable (path, or name in
// config.path_env), in this order: hl-smi (habana), nvidia-smi (nvidia), amd-smi
// (amd), npu-smi (ascend), xpu-smi (intel), neuron-ls (neuron), mthreads-gmi
// (mthreads), cnmon (cambricon); then a TPU chip under config.sysfs_root (tpu); else the
// error "no hl-smi, nvidia-smi, amd-smi, npu-smi, xpu-smi, neuron-ls, mthreads-gmi, cnmon
// or TPU chip found". Looks at files only; runs nothing.
Result<api::Vendor> detect_vendor(const InventoryConfig& config);

// `vendor` is one of vendor_choices(). The source reads through `runner`, which must
// outlive it.
Result<std::unique_ptr<InventorySource>> make_inventory_source(const std::string& vendor, CommandRunner& runner,
                                                               const InventoryConfig& config);

// The --vendor values: the supported vendors' names, then "auto".
const std::vector<std::string>& vendor_choices();

}  // namespace tessel::agent
