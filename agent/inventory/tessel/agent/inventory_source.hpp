#pragma once
// Where a node's accelerator inventory comes from. The agent holds one and calls
// read() at start and on each refresh; tests substitute their own.

#include "tessel/api/inventory.hpp"
#include "tessel/base/result.hpp"

namespace tessel::agent {

class InventorySource {
 public:
  virtual ~InventorySource() = default;
  // A fresh reading (nothing cached). Errors say why, without "reading inventory"
  // context, e.g. "hl-smi exited 3: no device".
  virtual Result<api::NodeInventory> read() = 0;
};

}  // namespace tessel::agent
