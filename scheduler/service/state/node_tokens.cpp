#include "tessel/scheduler/node_tokens.hpp"

#include <openssl/evp.h>
#include <spdlog/spdlog.h>

#include "tessel/base/random.hpp"
#include "tessel/scheduler/api_error.hpp"

namespace tessel::scheduler {

namespace {

// 32 bytes: 256 bits, as the scheduler's own key towards agents.
constexpr size_t kTokenBytes = 32;

// The names register_node accepts.
Status check_node_name(const std::string& node) {
  if (node.empty() || node.size() > 253 ||
      node.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789.-_") != std::string::npos)
    return Error::invalid("name: 1-253 characters of letters, digits, '.', '-', '_'", "name");
  return ok_status();
}

}  // namespace

std::string sha256_hex(std::string_view data) {
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  // Cannot fail for SHA-256 on memory short of an allocation failure: terminate then.
  if (EVP_Digest(data.data(), data.size(), digest, &len, EVP_sha256(), nullptr) != 1) std::abort();
  static const char* kHex = "0123456789abcdef";
  std::string out;
  out.reserve(size_t{2} * len);
  for (unsigned int i = 0; i < len; ++i) {
    out += kHex[digest[i] >> 4];
    out += kHex[digest[i] & 0xf];
  }
  return out;
}

void NodeTokens::restore(const std::vector<NodeToken>& stored) {
  MutexLock lk(mu_);
  by_node_.clear();
  node_by_hash_.clear();
  for (const auto& t : stored) {
    by_node_[t.node] = t;
    node_by_hash_[t.sha256] = t.node;
  }
}

Result<NodeTokens::Issued> NodeTokens::issue(const std::string& node) {
  if (auto s = check_node_name(node); !s) return s.error();
  auto token = random_hex(kTokenBytes);
  if (!token) return token.error().wrap("a token for node " + node);
  NodeToken rec{node, sha256_hex(*token), clock_.now_ms()};
  WriteBatch b;
  b.put_node_tokens.push_back(rec);
  MutexLock lk(mu_);
  if (auto s = write_(b); !s) return storage_unavailable("the token of node " + node, s.error().message);
  auto old = by_node_.find(node);
  const bool rotated = old != by_node_.end();
  if (rotated) node_by_hash_.erase(old->second.sha256);
  by_node_[node] = rec;
  node_by_hash_[rec.sha256] = node;
  spdlog::info("node {}: agent token {}", node, rotated ? "rotated (the old one no longer works)" : "issued");
  return Issued{node, *token, rec.issued_at_ms, rotated};
}

Result<std::string> NodeTokens::revoke(const std::string& node) {
  MutexLock lk(mu_);
  auto it = by_node_.find(node);
  if (it == by_node_.end()) return Error::not_found("node " + node + " has no issued token");
  WriteBatch b;
  b.delete_node_tokens.push_back(node);
  if (auto s = write_(b); !s)
    return storage_unavailable("the revocation of node " + node + "'s token", s.error().message);
  std::string hash = it->second.sha256;
  node_by_hash_.erase(hash);
  by_node_.erase(it);
  spdlog::info("node {}: agent token revoked", node);
  return hash;
}

std::vector<NodeToken> NodeTokens::list() const {
  MutexLock lk(mu_);
  std::vector<NodeToken> out;
  out.reserve(by_node_.size());
  for (const auto& [node, rec] : by_node_) out.push_back(rec);
  return out;
}

std::optional<std::string> NodeTokens::node_of(const std::string& token) const {
  const std::string hash = sha256_hex(token);
  MutexLock lk(mu_);
  auto it = node_by_hash_.find(hash);
  if (it == node_by_hash_.end()) return std::nullopt;
  return it->second;
}

}  // namespace tessel::scheduler
