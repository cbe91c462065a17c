#include "tessel/scheduler/auth.hpp"

namespace tessel::scheduler {

namespace {
bool allowed(Role role, Action action) {
  switch (role) {
    case Role::admin: return true;
    case Role::user: return action == Action::read || action == Action::submit || action == Action::cancel;
    case Role::agent: return action == Action::agent;
  }
  return false;
}
}  // namespace

Result<Principal> Authenticator::authorize(const std::string& header, Action action) const {
  if (!tokens_) return Principal{"anonymous", Role::admin, "", {}};
  static const std::string kBearer = "Bearer ";
  if (header.rfind(kBearer, 0) != 0) return Error::unauthenticated("missing Authorization: Bearer token");
  auto it = tokens_->by_token.find(header.substr(kBearer.size()));
  if (it == tokens_->by_token.end()) return Error::unauthenticated("unknown token");
  if (!allowed(it->second.role, action))
    return Error::forbidden("role " + to_string(it->second.role) + " may not do this");
  return it->second;
}

Status may_act_for_node(const Principal& who, const std::string& node) {
  if (who.role != Role::agent || who.name == node) return ok_status();
  return Error::forbidden("the token of agent " + who.name + " may act for node " + who.name + " only, not " + node);
}

bool may_see_job_details(const Principal& who, const std::string& owner) {
  return who.role == Role::admin || who.name == owner;
}

}  // namespace tessel::scheduler
