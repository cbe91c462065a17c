#include "tessel/agent/reconcile.hpp"

namespace tessel::agent {

ReconcilePlan reconcile(const std::vector<api::Assignment>& desired, const std::vector<KnownTask>& known,
                        const std::set<std::string>& started) {
  ReconcilePlan plan;
  std::set<std::string> listed;
  for (const auto& a : desired) {
    if (!listed.insert(a.id).second) continue;  // Duplicate in one answer: apply once.
    if (!started.count(a.id)) plan.start.push_back(a);
  }
  for (const auto& k : known)
    if (k.running && !k.kill_requested && !listed.count(k.id)) plan.kill.push_back(k.id);
  return plan;
}

}  // namespace tessel::agent
