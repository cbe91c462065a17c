#include "tessel/scheduler/auth.hpp"

#include <algorithm>
#include <string_view>
#include <vector>

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

std::string without_job_secrets(std::string text, const api::JobSpec& spec) {
  std::vector<std::string_view> secrets;
  secrets.emplace_back(spec.workdir);
  for (const auto& arg : spec.command) secrets.emplace_back(arg);
  for (const auto& [_, value] : spec.env) secrets.emplace_back(value);
  // Longest first, so a value inside another is not cut out of it first.
  std::sort(secrets.begin(), secrets.end(), [](std::string_view a, std::string_view b) { return a.size() > b.size(); });
  static constexpr std::string_view kMark = "<private>";
  for (std::string_view secret : secrets) {
    if (secret.size() < 3) continue;
    for (size_t at = text.find(secret); at != std::string::npos; at = text.find(secret, at + kMark.size()))
      text.replace(at, secret.size(), kMark);
  }
  return text;
}

}  // namespace tessel::scheduler
