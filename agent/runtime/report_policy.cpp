#include "tessel/agent/report_policy.hpp"

#include <algorithm>
#include <tuple>

namespace tessel::agent {

bool same_report(const api::TaskReport& a, const api::TaskReport& b) {
  return std::tie(a.assignment_id, a.state, a.exit_code, a.signal, a.message, a.port) ==
         std::tie(b.assignment_id, b.state, b.exit_code, b.signal, b.message, b.port);
}

bool same_reports(const std::vector<api::TaskReport>& a, const std::vector<api::TaskReport>& b) {
  return std::equal(a.begin(), a.end(), b.begin(), b.end(), same_report);
}

std::vector<api::TaskReport> without_acknowledged(std::vector<api::TaskReport> sent,
                                                  const std::vector<std::string>& acked) {
  std::erase_if(sent, [&](const api::TaskReport& r) {
    return std::find(acked.begin(), acked.end(), r.assignment_id) != acked.end();
  });
  return sent;
}

bool periodic_report_due(const std::vector<api::TaskReport>& current,
                         const std::optional<std::vector<api::TaskReport>>& last_accepted) {
  if (!last_accepted || !same_reports(current, *last_accepted)) return true;
  return std::any_of(current.begin(), current.end(),
                     [](const api::TaskReport& r) { return r.state != api::TaskState::running; });
}

}  // namespace tessel::agent
