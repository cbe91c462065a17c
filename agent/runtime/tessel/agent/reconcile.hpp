#pragma once
// Desired-state reconciliation as a pure decision: which assignments to start and
// which running tasks to kill, given what the scheduler lists and what the agent knows.

#include <set>
#include <string>
#include <vector>

#include "tessel/api/agent_protocol.hpp"

namespace tessel::agent {

struct KnownTask {
  std::string id;
  bool running = false;         // Supervisor alive and no result yet.
  bool kill_requested = false;  // A stop was already sent.
};

struct ReconcilePlan {
  std::vector<api::Assignment> start;  // Listed and never started (in listed order).
  std::vector<std::string> kill;       // Running, not listed, not already being stopped.
};

// `started` holds every assignment id ever started here (durable record), which
// may include ids no longer in `known` (acknowledged and forgotten).
ReconcilePlan reconcile(const std::vector<api::Assignment>& desired, const std::vector<KnownTask>& known,
                        const std::set<std::string>& started);

}  // namespace tessel::agent
