#pragma once
// tessel-agent --cdi-spec-dir DIR: keeps the node's CDI spec (cdi_spec.hpp) in
// DIR/tessel-<class>.json ("tessel-gaudi.json"), so that operators' own podman finds it
// (podman reads /etc/cdi and /var/run/cdi). Written at start once the inventory is
// read, and again whenever the cards or their nodes change; an agent with no cards (or
// none with nodes) writes none and removes the one it finds there. Each write replaces
// the file atomically (temp file + rename; the temp's ".json.tmp" name is not a spec
// to CDI), mode 0644: it names device paths only, and podman run by any user may read it.

#include <optional>
#include <string>

#include "tessel/agent/inventory_source.hpp"
#include "tessel/api/inventory.hpp"
#include "tessel/base/result.hpp"

namespace tessel::agent {

// --cdi-spec-dir's value: an absolute path to an existing directory. Errors name the flag.
Status check_cdi_spec_dir(const std::string& dir);
// DIR/tessel-<cdi_class(vendor)>.json.
std::string cdi_spec_path(const std::string& dir, api::Vendor vendor);
// The spec for `inv`'s cards with their nodes as they are under `dev_root` now
// (find_card_nodes(), the shared control nodes present); nullopt when none is due.
std::optional<std::string> node_cdi_spec(const api::NodeInventory& inv, const std::string& dev_root,
                                         const std::string& sysfs_root);

// The inner source's inventory, unchanged; each good read also brings DIR's spec up to
// date. A failed write is logged (once per distinct error) and retried at the next
// read; it never fails the read. A failed read leaves the spec as it was.
// Thread-compatible: the agent reads its inventory on one thread at a time.
class CdiSpecSource final : public InventorySource {
 public:
  CdiSpecSource(InventorySource& inner, std::string dir, std::string dev_root, std::string sysfs_root)
      : inner_(inner), dir_(std::move(dir)), dev_root_(std::move(dev_root)), sysfs_root_(std::move(sysfs_root)) {}
  Result<api::NodeInventory> read() override;
  // Writes (or removes) the spec of `inv` unless the file already holds it as this
  // source left it. Errors say which file and why.
  Status update(const api::NodeInventory& inv);

 private:
  InventorySource& inner_;
  const std::string dir_, dev_root_, sysfs_root_;
  // What this source last left in the file: its text, "" for no file; nullopt before
  // the first update (a file left by an earlier agent is replaced or removed then).
  std::optional<std::string> on_disk_;
  std::string last_error_;  // The last failure logged; "" after a success.
};

}  // namespace tessel::agent
