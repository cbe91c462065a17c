#include "tessel/scheduler/version_skew.hpp"

#include <spdlog/spdlog.h>

#include "tessel/scheduler/state.hpp"

namespace tessel::scheduler {

namespace {
bool known(const std::string& v) { return !v.empty() && v != "unknown"; }

std::string join(const std::set<std::string>& values) {
  std::string out;
  for (const std::string& v : values) out += (out.empty() ? "" : ", ") + v;
  return out;
}
}  // namespace

void VersionCensus::add(const api::NodeInventory& inv) {
  for (const api::Device& d : inv.devices) {
    Versions& v = models_[d.model];
    if (known(inv.driver_version)) v.driver.insert(inv.driver_version);
    if (known(d.firmware_version)) v.firmware.insert(d.firmware_version);
  }
}

std::map<std::string, bool> VersionCensus::skew() const {
  std::map<std::string, bool> out;
  for (const auto& [model, v] : models_) out[model] = v.driver.size() > 1 || v.firmware.size() > 1;
  return out;
}

std::map<std::string, std::string> VersionCensus::skewed() const {
  std::map<std::string, std::string> out;
  for (const auto& [model, v] : models_) {
    std::string what;
    if (v.driver.size() > 1) what = "driver " + join(v.driver);
    if (v.firmware.size() > 1) what += (what.empty() ? "" : "; ") + std::string("firmware ") + join(v.firmware);
    if (!what.empty()) out[model] = what;
  }
  return out;
}

void ClusterState::note_version_skew_locked() {
  VersionCensus census;
  for (const auto& [_, n] : nodes_) census.add(n.rec.inventory);
  std::map<std::string, std::string> now = census.skewed();
  for (const auto& [model, what] : now) {
    auto it = version_skew_.find(model);
    if (it == version_skew_.end() || it->second != what)
      spdlog::warn("nodes with {} cards report different versions ({}): multi-node jobs across them may fail", model,
                   what);
  }
  for (const auto& [model, _] : version_skew_)
    if (!now.count(model)) spdlog::info("nodes with {} cards report the same versions again", model);
  version_skew_ = std::move(now);
}

}  // namespace tessel::scheduler
