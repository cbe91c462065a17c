#pragma once
// Driver and firmware versions by card model across the cluster: nodes of one model
// that report different versions are a frequent cause of multi-node jobs that hang
// or fail at start. Pure: inventories in, a census out.

#include <map>
#include <set>
#include <string>

#include "tessel/api/inventory.hpp"

namespace tessel::scheduler {

class VersionCensus {
 public:
  // Counts every card of `inv` under its model: the node's driver version and the
  // card's firmware version. Empty and "unknown" versions are not counted.
  void add(const api::NodeInventory& inv);

  // Every model seen, and whether its cards report more than one driver version or
  // more than one firmware version.
  std::map<std::string, bool> skew() const;
  // For each skewed model: "driver 1.16.0-a, 1.17.0-e4d8f8b; firmware ...".
  std::map<std::string, std::string> skewed() const;

 private:
  struct Versions {
    std::set<std::string> driver;
    std::set<std::string> firmware;
  };
  std::map<std::string, Versions> models_;
};

}  // namespace tessel::scheduler
