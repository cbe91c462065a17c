#pragma once
// Cards' device nodes per vendor (issue 28): which nodes under /dev (or a stand-in
// --dev-root) belong to which card, so a task's cgroup can refuse the other cards'.
// The policy is "deny the other cards": the task's own cards, the vendor's shared
// control nodes and every device that is no card's (/dev/null, ttys, ptys, RDMA
// verbs, fuse ...) stay open; every per-card node of another card answers EPERM.
// A per-card node that cannot be tied to a card is denied too.
//
// Per-card nodes (N the card's Device::index):
//   habana     accel/accelN, accel/accel_controlDN
//   nvidia     nvidiaN                      shared: nvidiactl nvidia-uvm nvidia-uvm-tools nvidia-modeset
//   amd        dri/cardN, dri/renderD(128+N) (by the card's PCI address in sysfs when
//              <sysfs>/bus/pci/devices/<bus_id>/drm lists them)     shared: kfd
//   intel, mthreads  dri/ as amd            (none shared)
//   ascend     davinciN                     shared: davinci_manager devmm_svm hisi_hdc
//   neuron     neuronN;  tpu accelN;  cambricon cambricon_devN     shared (cambricon): cambricon_ctl

#include <string>
#include <vector>

#include "tessel/api/inventory.hpp"
#include "tessel/agent/task_cgroup.hpp"

namespace tessel::agent {

struct CardNode {
  std::string path;     // Relative to the dev root: "accel/accel3".
  int card_index = -1;  // Device::index of its card; -1 when not known.
  bool operator==(const CardNode&) const = default;
};

// The per-card nodes of `vendor` present under `dev_root`, sorted by path.
std::vector<CardNode> find_card_nodes(api::Vendor vendor, const std::string& dev_root, const std::string& sysfs_root,
                                      const std::vector<api::Device>& devices);
// The vendor's shared control nodes (relative to the dev root), open to every task.
const std::vector<std::string>& shared_control_nodes(api::Vendor vendor);
// The rules that refuse every card node of `nodes` not of `task_indices` (device
// numbers by stat(); nodes that are not device files are skipped).
std::vector<DeviceRule> other_cards_rules(const std::vector<CardNode>& nodes, const std::vector<int>& task_indices,
                                          const std::string& dev_root);

}  // namespace tessel::agent
