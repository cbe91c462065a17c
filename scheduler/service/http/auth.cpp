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
  const std::string token = header.substr(kBearer.size());
  Principal who;
  if (auto it = tokens_->by_token.find(token); it != tokens_->by_token.end()) {
    who = it->second;
  } else if (auto node = issued_ ? issued_(token) : std::nullopt) {
    who = Principal{*node, Role::agent, token, {}};
  } else {
    return Error::unauthenticated("unknown token");
  }
  if (!allowed(who.role, action)) return Error::forbidden("role " + to_string(who.role) + " may not do this");
  return who;
}

Status may_act_for_node(const Principal& who, const std::string& node) {
  if (who.role != Role::agent || who.name == node) return ok_status();
  return Error::forbidden("the token of agent " + who.name + " may act for node " + who.name + " only, not " + node);
}

bool may_see_job_details(const Principal& who, const std::string& owner) {
  return who.role == Role::admin || who.name == owner;
}

}  // namespace tessel::scheduler
