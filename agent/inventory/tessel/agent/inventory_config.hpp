#pragma once
// How to reach the vendor tools: shared by every inventory source and by vendor
// detection.

#include <chrono>
#include <filesystem>
#include <string>

namespace tessel::agent {

struct InventoryConfig {
  std::string hl_smi = "hl-smi";              // A path, or a name looked up in path_env.
  std::string nvidia_smi = "nvidia-smi";      // Same.
  std::string amd_smi = "amd-smi";            // Same.
  std::string rocm_smi = "rocm-smi";          // Same; run only when amd_smi is not found.
  std::string npu_smi = "npu-smi";            // Same.
  std::string xpu_smi = "xpu-smi";            // Same.
  std::string neuron_ls = "neuron-ls";        // Same.
  std::string mthreads_gmi = "mthreads-gmi";  // Same.
  std::string cnmon = "cnmon";                // Same.
  std::filesystem::path sysfs_root = "/sys";
  std::chrono::milliseconds timeout{10000};
  // hl-smi: read the cards' NIC ports (one call per card) on every Nth inventory read
  // (about every 30 s at the agent's 5 s heartbeat); 1: every read.
  int ports_every = 6;
  std::string path_env;  // PATH used for bare names; set it from process_path_env().
};

}  // namespace tessel::agent
