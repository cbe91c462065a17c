#pragma once
// NodeTokens: agent tokens that an admin issues, one per node (POST
// /v1/nodes/{name}/token), next to the tokens file's. A token is 32 bytes from the
// kernel's random source, shown once, at issue; memory and the store keep only its
// SHA-256, so a copy of the database lets no one act as a node. Issuing again for a
// node rotates its token; revoking deletes it. Either takes effect for the next
// request: the lookup reads the same map; long polls parked with the old token are
// checked again before they are answered.
// Thread-safe: one mutex. issue() and revoke() hold it across their store write, so
// a lookup never accepts a token the store does not hold (or no longer holds); they
// are rare admin requests, and lookups wait for one write at most.

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "tessel/base/result.hpp"
#include "tessel/scheduler/store.hpp"
#include "tessel/sync/mutex.hpp"
#include "tessel/time/clock.hpp"

namespace tessel::scheduler {

// Lower-case hex of the SHA-256 of `data`.
std::string sha256_hex(std::string_view data);

class NodeTokens {
 public:
  // Writes one batch durably (the cluster state's write, which counts failures).
  using Write = std::function<Status(const WriteBatch&)>;
  NodeTokens(Write write, const Clock& clock) : write_(std::move(write)), clock_(clock) {}
  NodeTokens(const NodeTokens&) = delete;
  NodeTokens& operator=(const NodeTokens&) = delete;

  // The stored hashes (Snapshot::node_tokens); replaces what is held.
  void restore(const std::vector<NodeToken>& stored) EXCLUDES(mu_);

  struct Issued {
    std::string node;
    std::string token;  // The only copy: the caller hands it to the admin.
    int64_t issued_at_ms = 0;
    bool rotated = false;  // The node had a token, which no longer works.
  };
  // A new token for `node` (a valid node name, registered or not yet). Errors:
  // invalid_argument naming `name`; unavailable when the store refuses the write
  // (the old token, if any, still works then).
  Result<Issued> issue(const std::string& node) EXCLUDES(mu_);
  // Deletes `node`'s token and returns its SHA-256 (ClusterState::token_revoked()
  // then ends what the token still holds): not_found when it has none; unavailable as
  // for issue().
  Result<std::string> revoke(const std::string& node) EXCLUDES(mu_);
  // Every issued token's node and time of issue, by node name (hashes included: the
  // caller shows no more than the node and the time).
  std::vector<NodeToken> list() const EXCLUDES(mu_);
  // The node whose issued token `token` is, if any.
  std::optional<std::string> node_of(const std::string& token) const EXCLUDES(mu_);

 private:
  const Write write_;
  const Clock& clock_;
  mutable Mutex mu_;
  std::map<std::string, NodeToken> by_node_ GUARDED_BY(mu_);
  std::map<std::string, std::string> node_by_hash_ GUARDED_BY(mu_);
};

}  // namespace tessel::scheduler
