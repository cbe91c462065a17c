#include "tessel/scheduler/tokens.hpp"

#include <sys/stat.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <vector>

#include "tessel/api/job.hpp"

namespace tessel::scheduler {

std::string to_string(Role r) {
  switch (r) {
    case Role::admin: return "admin";
    case Role::user: return "user";
    case Role::agent: return "agent";
  }
  return "unknown";
}

std::optional<Role> parse_role(std::string_view s) {
  if (s == "admin") return Role::admin;
  if (s == "user") return Role::user;
  if (s == "agent") return Role::agent;
  return std::nullopt;
}

namespace {

bool is_space(char c) { return c == ' ' || c == '\t' || c == '\r'; }

std::vector<std::string_view> split_fields(std::string_view line) {
  std::vector<std::string_view> out;
  size_t i = 0;
  while (i < line.size()) {
    while (i < line.size() && is_space(line[i])) ++i;
    size_t start = i;
    while (i < line.size() && !is_space(line[i])) ++i;
    if (i > start) out.push_back(line.substr(start, i - start));
  }
  return out;
}

// A token file's token or name: no whitespace or control bytes.
bool token_field_ok(std::string_view s) {
  for (unsigned char c : s)
    if (c < 0x21 || c == 0x7f) return false;
  return true;
}

// "a,b,c" -> {a, b, c}: each a valid project name, none repeated.
Result<std::vector<std::string>> split_projects(std::string_view list) {
  std::vector<std::string> out;
  size_t pos = 0;
  for (;;) {
    size_t comma = list.find(',', pos);
    std::string_view name = list.substr(pos, comma == std::string_view::npos ? std::string_view::npos : comma - pos);
    if (!api::is_project_name(name)) return Error{"projects must be comma-separated project names"};
    if (std::find(out.begin(), out.end(), name) != out.end()) return Error{"project listed twice"};
    out.emplace_back(name);
    if (comma == std::string_view::npos) return out;
    pos = comma + 1;
  }
}

}  // namespace

Result<TokenTable> parse_tokens(std::string_view text) {
  TokenTable table;
  size_t line_no = 0;
  size_t pos = 0;
  while (pos <= text.size()) {
    size_t end = text.find('\n', pos);
    if (end == std::string_view::npos) end = text.size();
    std::string_view line = text.substr(pos, end - pos);
    ++line_no;
    pos = end + 1;
    auto fields = split_fields(line);
    auto where = "line " + std::to_string(line_no) + ": ";
    if (fields.empty() || fields[0][0] == '#') {
      if (end == text.size()) break;
      continue;
    }
    if (fields.size() != 3 && fields.size() != 4) return Error{where + "expected TOKEN ROLE NAME [PROJECTS]"};
    if (!token_field_ok(fields[0]) || !token_field_ok(fields[2]) || fields[0].size() > 512 || fields[2].size() > 128)
      return Error{where + "token and name must be printable and short"};
    auto role = parse_role(fields[1]);
    if (!role) return Error{where + "role must be admin, user or agent"};
    std::string token(fields[0]);
    if (table.by_token.count(token)) return Error{where + "duplicate token"};
    std::vector<std::string> projects;
    if (fields.size() == 4) {
      auto list = split_projects(fields[3]);
      if (!list) return Error{where + list.error().message};
      projects = std::move(*list);
    }
    table.by_token[token] = Principal{std::string(fields[2]), *role, token, std::move(projects)};
    if (end == text.size()) break;
  }
  if (table.by_token.empty()) return Error{"no tokens defined"};
  return table;
}

Result<TokenTable> load_tokens_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return Error{path + ": cannot open"};
  std::ostringstream ss;
  ss << in.rdbuf();
  if (in.bad()) return Error{path + ": read failed"};
  auto t = parse_tokens(ss.str());
  if (!t) return t.error().wrap(path);
  return t;
}

std::vector<std::string> tokens_file_warnings(const std::string& path, const TokenTable& table) {
  std::vector<std::string> out;
  struct stat st {};
  if (::stat(path.c_str(), &st) == 0 && (st.st_mode & 077) != 0) {
    char mode[8];
    std::snprintf(mode, sizeof mode, "%04o", static_cast<unsigned>(st.st_mode & 07777));
    out.push_back("tokens file " + path + " is open to group or others (mode " + mode + "): chmod 600 " + path);
  }
  for (const auto& [token, who] : table.by_token)
    if (token.size() < kMinTokenChars)
      out.push_back("the token of " + to_string(who.role) + " " + who.name + " has " + std::to_string(token.size()) +
                    " characters: use at least 32 random ones (openssl rand -hex 16)");
  return out;
}

}  // namespace tessel::scheduler
