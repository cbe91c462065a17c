#pragma once
// Pure decisions of the agent's reporter (agent.hpp): what the scheduler holds after it
// answered a report, and whether the periodic check must send the reports again.

#include <optional>
#include <string>
#include <vector>

#include "tessel/api/agent_protocol.hpp"

namespace tessel::agent {

bool same_report(const api::TaskReport& a, const api::TaskReport& b);
bool same_reports(const std::vector<api::TaskReport>& a, const std::vector<api::TaskReport>& b);

// What the scheduler holds from us after it accepted `sent` and acknowledged `acked`
// (the agent forgets acknowledged tasks, so they leave its reports too).
std::vector<api::TaskReport> without_acknowledged(std::vector<api::TaskReport> sent,
                                                  const std::vector<std::string>& acked);

// The periodic check sends `current` when it differs from what the scheduler last
// accepted (nullopt: nothing yet): a change nobody announced, e.g. a supervisor that died
// without writing a result. It also sends while a finished task is unacknowledged: the
// scheduler holds back the ack of a gang rank until its job is decided, and an ack only
// comes back in the answer to a report.
bool periodic_report_due(const std::vector<api::TaskReport>& current,
                         const std::optional<std::vector<api::TaskReport>>& last_accepted);

}  // namespace tessel::agent
