#include "tessel/agent/proc_info.hpp"

#include <sstream>
#include <vector>

#include "tessel/agent/durable_file.hpp"

namespace tessel::agent {

static std::optional<std::vector<std::string>> fields_after_comm(const std::string& stat) {
  auto close = stat.rfind(')');
  if (close == std::string::npos) return std::nullopt;
  std::istringstream in(stat.substr(close + 1));
  std::vector<std::string> f;
  std::string tok;
  while (in >> tok) f.push_back(tok);
  return f;  // f[0] is field 3 (state).
}

Result<uint64_t> parse_stat_start_time(const std::string& stat) {
  auto f = fields_after_comm(stat);
  if (!f || f->size() < 20) return Error{"stat: too few fields"};
  try {
    return static_cast<uint64_t>(std::stoull((*f)[19]));
  } catch (const std::exception&) {
    return Error{"stat: starttime is not a number"};
  }
}

std::optional<char> parse_stat_state(const std::string& stat) {
  auto f = fields_after_comm(stat);
  if (!f || f->empty() || (*f)[0].empty()) return std::nullopt;
  return (*f)[0][0];
}

std::optional<uint64_t> process_start_time(int pid, const std::string& proc_root) {
  if (pid <= 0) return std::nullopt;
  auto text = read_small_file(proc_root + "/" + std::to_string(pid) + "/stat", 4096);
  if (!text) return std::nullopt;
  auto st = parse_stat_state(*text);
  if (!st || *st == 'Z' || *st == 'X') return std::nullopt;
  auto t = parse_stat_start_time(*text);
  if (!t) return std::nullopt;
  return *t;
}

bool is_same_process_alive(int pid, uint64_t start_time, const std::string& proc_root) {
  auto t = process_start_time(pid, proc_root);
  return t && *t == start_time;
}

}  // namespace tessel::agent
