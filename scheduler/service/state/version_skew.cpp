#include "tessel/scheduler/version_skew.hpp"

#include <spdlog/spdlog.h>

namespace tessel::scheduler {

namespace {
bool known(const std::string& v) { return !v.empty() && v != "unknown"; }

std::string join(const std::map<std::string, int64_t>& values) {
  std::string out;
  for (const auto& [v, _] : values) out += (out.empty() ? "" : ", ") + v;
  return out;
}
}  // namespace

VersionCensus::Entry VersionCensus::entry_of(const api::NodeInventory& inv) {
  Entry e{inv.driver_version, {}};
  e.cards.reserve(inv.devices.size());
  for (const api::Device& d : inv.devices) e.cards.emplace_back(d.model, d.firmware_version);
  return e;
}

void VersionCensus::change(const Entry& e, int by) {
  auto count = [by](std::map<std::string, int64_t>& counts, const std::string& version) {
    if (!known(version)) return;
    if ((counts[version] += by) <= 0) counts.erase(version);
  };
  for (const auto& [model, firmware] : e.cards) {
    Versions& v = models_[model];
    count(v.driver, e.driver);
    count(v.firmware, firmware);
    if ((v.cards += by) <= 0) models_.erase(model);
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

void VersionWatch::note(const std::string& node, const api::NodeInventory* inventory) {
  if (auto was = counted_.find(node); was != counted_.end()) {
    census_.remove(was->second);
    counted_.erase(was);
  }
  if (inventory) census_.add(counted_.emplace(node, VersionCensus::entry_of(*inventory)).first->second);
  std::map<std::string, std::string> now = census_.skewed();
  for (const auto& [model, what] : now) {
    auto it = logged_.find(model);
    if (it == logged_.end() || it->second != what)
      spdlog::warn("nodes with {} cards report different versions ({}): multi-node jobs across them may fail", model,
                   what);
  }
  for (const auto& [model, _] : logged_)
    if (!now.count(model)) spdlog::info("nodes with {} cards report the same versions again", model);
  logged_ = std::move(now);
}

}  // namespace tessel::scheduler
