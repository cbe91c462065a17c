#include "tessel/agent/inventory_cli.hpp"

#include <CLI/CLI.hpp>
#include <cmath>
#include <iostream>
#include <nlohmann/json.hpp>

#include "tessel/agent/command_runner.hpp"
#include "tessel/agent/executable.hpp"
#include "tessel/agent/vendor_detect.hpp"

namespace tessel::agent {

int inventory_main(int argc, char** argv) { return inventory_main(argc, argv, std::cout, std::cerr); }

int inventory_main(int argc, char** argv, std::ostream& out, std::ostream& err) {
  const std::string prog = "tessel-agent inventory";
  CLI::App app{"Print this node's accelerator inventory as JSON", prog};
  std::string vendor = "auto";
  InventoryConfig config;
  std::string sysfs_root = config.sysfs_root.string();
  double timeout_s = 10.0;
  app.add_option("--vendor", vendor, "Which vendor tool to use")
      ->check(CLI::IsMember(vendor_choices()))
      ->capture_default_str();
  app.add_option("--hl-smi", config.hl_smi, "hl-smi path or name (looked up in PATH)")->capture_default_str();
  app.add_option("--nvidia-smi", config.nvidia_smi, "nvidia-smi path or name (looked up in PATH)")
      ->capture_default_str();
  app.add_option("--amd-smi", config.amd_smi, "amd-smi path or name (looked up in PATH)")->capture_default_str();
  app.add_option("--rocm-smi", config.rocm_smi, "rocm-smi path or name (run when amd-smi is not found)")
      ->capture_default_str();
  app.add_option("--npu-smi", config.npu_smi, "npu-smi path or name (looked up in PATH)")->capture_default_str();
  app.add_option("--xpu-smi", config.xpu_smi, "xpu-smi path or name (looked up in PATH)")->capture_default_str();
  app.add_option("--neuron-ls", config.neuron_ls, "neuron-ls path or name (looked up in PATH)")->capture_default_str();
  app.add_option("--mthreads-gmi", config.mthreads_gmi, "mthreads-gmi path or name (looked up in PATH)")
      ->capture_default_str();
  app.add_option("--cnmon", config.cnmon, "cnmon path or name (looked up in PATH)")->capture_default_str();
  app.add_option("--sysfs-root", sysfs_root, "Root of sysfs, for card health")->capture_default_str();
  app.add_option("--timeout", timeout_s, "Seconds to wait for the vendor tool")
      ->check(CLI::Range(0.001, 3600.0))
      ->capture_default_str();
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    if (e.get_exit_code() == 0) {  // --help
      out << app.help();
      return 0;
    }
    err << prog << ": " << e.what() << "\n";
    return 2;
  }
  config.sysfs_root = sysfs_root;
  config.timeout = std::chrono::milliseconds(static_cast<int64_t>(std::llround(timeout_s * 1000.0)));
  config.path_env = process_path_env();

  ProcessRunner runner;
  auto source = make_inventory_source(vendor, runner, config);
  if (!source) {
    err << prog << ": " << source.error().wrap("reading inventory").message << "\n";
    return 1;
  }
  auto inv = (*source)->read();
  if (!inv) {
    err << prog << ": " << inv.error().wrap("reading inventory").message << "\n";
    return 1;
  }
  out << api::to_json(*inv).dump(2) << "\n";
  return 0;
}

}  // namespace tessel::agent
