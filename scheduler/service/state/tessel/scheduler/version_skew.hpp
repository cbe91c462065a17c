#pragma once
// Driver and firmware versions by card model across the cluster: nodes of one model
// that report different versions are a frequent cause of multi-node jobs that hang
// or fail at start. VersionCensus is pure: inventories in, a census out. VersionWatch
// keeps one across changes and logs each model whose versions start or stop to differ.

#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "tessel/api/inventory.hpp"

namespace tessel::scheduler {

class VersionCensus {
 public:
  // What of a node's inventory the census counts: its driver version, and each card's
  // model and firmware version.
  struct Entry {
    std::string driver;
    std::vector<std::pair<std::string, std::string>> cards;  // (model, firmware)
  };
  static Entry entry_of(const api::NodeInventory& inv);

  // Counts every card of `inv` under its model: the node's driver version and the
  // card's firmware version. Empty and "unknown" versions are not counted.
  void add(const api::NodeInventory& inv) { change(entry_of(inv), +1); }
  void add(const Entry& e) { change(e, +1); }
  // Takes back an add() of the same entry: a census kept across changes costs one
  // node's cards per change, not the whole cluster's.
  void remove(const Entry& e) { change(e, -1); }

  // Every model seen, and whether its cards report more than one driver version or
  // more than one firmware version.
  std::map<std::string, bool> skew() const;
  // For each skewed model: "driver 1.16.0-a, 1.17.0-e4d8f8b; firmware ...".
  std::map<std::string, std::string> skewed() const;

 private:
  void change(const Entry& e, int by);
  struct Versions {
    std::map<std::string, int64_t> driver;  // Version -> cards reporting it.
    std::map<std::string, int64_t> firmware;
    int64_t cards = 0;
  };
  std::map<std::string, Versions> models_;
};

// Not thread-safe: its owner (ClusterState) keeps it under its mutex.
class VersionWatch {
 public:
  // After `node`'s inventory changed (`inventory`), or the node went (nullptr):
  // recounts that node's cards and logs (warning) each model whose versions now
  // differ, once per change, and (info) each that agrees again.
  void note(const std::string& node, const api::NodeInventory* inventory);
  // Every model seen, and whether its cards report different versions.
  std::map<std::string, bool> skew() const { return census_.skew(); }

 private:
  VersionCensus census_;
  std::map<std::string, VersionCensus::Entry> counted_;  // What census_ counted per node.
  std::map<std::string, std::string> logged_;            // Model -> versions last logged.
};

}  // namespace tessel::scheduler
