#pragma once
// The tokens file: one credential per line, `TOKEN ROLE NAME [PROJECTS]`, ROLE one
// of admin|user|agent; PROJECTS (optional) the comma-separated projects the
// credential may submit to, the first being its default (without it: the
// built-in project "default"); `#` starts a comment line; blank lines are ignored.
// parse_tokens is a pure function over the text (fuzzed by tests/fuzz/fuzz_tokens.cpp):
// it never throws and names the offending line in its error.

#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "tessel/base/result.hpp"

namespace tessel::scheduler {

enum class Role { admin, user, agent };
std::string to_string(Role r);
std::optional<Role> parse_role(std::string_view s);

struct Principal {
  std::string name;
  Role role = Role::admin;
  std::string token;  // Empty when authentication is off.
  // Projects this principal may submit to; the first is its default. Empty: only
  // api::kDefaultProject. Admins may submit to any project.
  std::vector<std::string> projects;
};

struct TokenTable {
  std::map<std::string, Principal> by_token;
};

// Errors read "line 3: expected TOKEN ROLE NAME [PROJECTS]".
Result<TokenTable> parse_tokens(std::string_view text);
// Reads and parses a file; errors start with the path.
Result<TokenTable> load_tokens_file(const std::string& path);

// Tokens shorter than this are easy to guess; the scheduler warns about each.
inline constexpr size_t kMinTokenChars = 16;
// What is unsafe about a tokens file that loads: readable or writable by group or
// others (its mode), tokens shorter than kMinTokenChars (by NAME, never the
// token). One line each; empty when nothing is.
std::vector<std::string> tokens_file_warnings(const std::string& path, const TokenTable& table);

}  // namespace tessel::scheduler
