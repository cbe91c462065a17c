#pragma once
// The projects as stored (POST/PUT /v1/projects), and the built-in default project
// (api::kDefaultProject: shares 1, no quotas) unless it is stored with other
// settings. What a job's project means for admission (its per-user cap), fair share
// (its shares), quotas and preemption (a guarantee) is read here.
// Not thread-safe: its owner (ClusterState) keeps it under its mutex.

#include <algorithm>
#include <cstdint>
#include <map>
#include <optional>
#include <string>

#include "tessel/api/project.hpp"

namespace tessel::scheduler {

class ProjectTable {
 public:
  static api::Project default_project() { return api::Project{api::kDefaultProject, 1, {}, std::nullopt}; }

  void put(api::Project p) {
    std::string name = p.name;
    stored_[std::move(name)] = std::move(p);
  }
  void erase(const std::string& name) { stored_.erase(name); }

  // Stored with POST or PUT (the default project only once set).
  bool stored(const std::string& name) const { return stored_.count(name) > 0; }
  // Stored, or the default project.
  bool exists(const std::string& name) const { return name == api::kDefaultProject || stored(name); }
  std::optional<api::Project> get(const std::string& name) const {
    if (auto it = stored_.find(name); it != stored_.end()) return it->second;
    if (name == api::kDefaultProject) return default_project();
    return std::nullopt;
  }
  // Every project by name, the default one included.
  std::map<std::string, api::Project> all() const {
    std::map<std::string, api::Project> out = stored_;
    out.emplace(api::kDefaultProject, default_project());
    return out;
  }
  // The projects stored, by name.
  const std::map<std::string, api::Project>& stored_projects() const { return stored_; }
  size_t stored_count() const { return stored_.size(); }

  // Fair-share shares by project, the default project's included.
  std::map<std::string, int64_t> shares() const {
    std::map<std::string, int64_t> out{{api::kDefaultProject, 1}};
    for (const auto& [name, p] : stored_) out[name] = p.shares;
    return out;
  }
  bool any_quota() const {
    return std::any_of(stored_.begin(), stored_.end(), [](const auto& p) { return !p.second.quotas.empty(); });
  }
  // Whether jobs of `name` may preempt: the project guarantees cards.
  bool may_preempt(const std::string& name) const {
    auto p = stored_.find(name);
    if (p == stored_.end()) return false;
    return std::any_of(p->second.quotas.begin(), p->second.quotas.end(),
                       [](const auto& q) { return q.second.guaranteed > 0; });
  }
  // The project's own cap on a user's jobs not yet ended, if it sets one.
  std::optional<int64_t> max_active_jobs_per_user(const std::string& name) const {
    auto p = stored_.find(name);
    return p == stored_.end() ? std::nullopt : p->second.max_active_jobs_per_user;
  }

 private:
  std::map<std::string, api::Project> stored_;
};

}  // namespace tessel::scheduler
