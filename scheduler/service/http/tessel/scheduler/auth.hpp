#pragma once
// Authenticator: maps an Authorization header to a Principal and decides what
// that principal may do. Without a token table everyone is admin "anonymous".
// A token not in the table may be an issued agent token (NodeTokens): `issued`
// names its node, and it acts as role agent NAME, bound to that node like a tokens
// file's `TOKEN agent NAME`. Immutable after construction; safe to share between
// threads (`issued` must be too).

#include <functional>
#include <optional>
#include <string>

#include "tessel/api/job.hpp"
#include "tessel/scheduler/api_error.hpp"
#include "tessel/scheduler/tokens.hpp"

namespace tessel::scheduler {

// What a request does. read/submit/cancel: user and admin; admin: admin only;
// agent: agent and admin.
enum class Action { read, submit, cancel, admin, agent };

class Authenticator {
 public:
  // The node an issued agent token belongs to, if it is one.
  using IssuedLookup = std::function<std::optional<std::string>(const std::string& token)>;
  explicit Authenticator(std::optional<TokenTable> tokens, IssuedLookup issued = nullptr)
      : tokens_(std::move(tokens)), issued_(std::move(issued)) {}

  bool enabled() const { return tokens_.has_value(); }

  // 401 when the header is missing or the token unknown, 403 when the role may not do `action`.
  Result<Principal> authorize(const std::string& authorization_header, Action action) const;

 private:
  std::optional<TokenTable> tokens_;
  IssuedLookup issued_;
};

// An agent's token is bound to the node its NAME names: it may register, heartbeat,
// poll and report for that node only (403 otherwise), so one node's credential
// cannot move, read or finish another node's work. Admins may act for any node.
Status may_act_for_node(const Principal& who, const std::string& node);

// A job's command, environment, working directory and logs are its owner's and
// the admins' (secrets travel in env); other users see that it exists, its
// state and its cards.
bool may_see_job_details(const Principal& who, const std::string& owner);

// `text` (a job's reason, an event's) as users who may not see the job's details
// read it: every occurrence of its workdir, its arguments and its env values (as a
// failure message quotes them: "exec /home/alice/train.py: ...") is replaced by
// "<private>". Values shorter than 3 characters are left: they give nothing away
// and would blot out the rest of the text.
std::string without_job_secrets(std::string text, const api::JobSpec& spec);

}  // namespace tessel::scheduler
