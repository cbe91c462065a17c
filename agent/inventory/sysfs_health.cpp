#include "tessel/agent/sysfs_health.hpp"

#include <fstream>
#include <sstream>

#include "tessel/agent/smi_text.hpp"

namespace tessel::agent {

namespace fs = std::filesystem;

static std::string trim_all(const std::string& s) {
  size_t b = s.find_first_not_of(" \t\r\n");
  if (b == std::string::npos) return "";
  size_t e = s.find_last_not_of(" \t\r\n");
  return s.substr(b, e - b + 1);
}

void apply_sysfs_health(const fs::path& sysfs_root, std::vector<api::Device>& devices) {
  for (api::Device& d : devices) {
    fs::path status = sysfs_root / "class" / "accel" / ("accel" + std::to_string(d.index)) / "device" / "status";
    std::error_code ec;
    if (!fs::exists(status, ec)) continue;
    std::ifstream in(status);
    if (!in.is_open()) {
      d.healthy = false;
      d.health_reason = "sysfs status unreadable: " + status.string();
      continue;
    }
    std::ostringstream text;
    text << in.rdbuf();
    std::string value = trim_all(text.str());
    if (value != "operational") {
      d.healthy = false;
      d.health_reason = "sysfs status " + smi::quote_line(value);
    }
  }
}

}  // namespace tessel::agent
