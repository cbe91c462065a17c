#include "tessel/cli/submit_args.hpp"

#include <cctype>
#include <cstring>
#include <filesystem>
#include <tuple>

#include "tessel/api/job.hpp"
#include "tessel/api/labels.hpp"
#include "tessel/cli/duration.hpp"
#include "tessel/cli/hostlist.hpp"

namespace tessel::cli {

using nlohmann::json;

namespace {
// "J1,J2" values of a repeatable flag -> the job ids, in order.
Result<json> job_ids(const std::vector<std::string>& values, const char* flag) {
  json ids = json::array();
  for (const auto& v : values) {
    size_t start = 0;
    for (;;) {
      const size_t comma = v.find(',', start);
      const std::string id = v.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
      if (id.empty())
        return Error::invalid(std::string(flag) + ": expected job ids separated by commas, got '" + v + "'", flag);
      ids.push_back(id);
      if (comma == std::string::npos) break;
      start = comma + 1;
    }
  }
  return ids;
}

// Comma-separated items of repeated flag values, each non-empty (`what` names them).
Result<std::vector<std::string>> comma_items(const std::vector<std::string>& values, const char* flag,
                                             const char* what) {
  std::vector<std::string> out;
  for (const auto& v : values) {
    size_t start = 0;
    for (;;) {
      const size_t comma = v.find(',', start);
      std::string item = v.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
      if (item.empty())
        return Error::invalid(std::string(flag) + ": expected " + what + " separated by commas, got '" + v + "'", flag);
      out.push_back(std::move(item));
      if (comma == std::string::npos) break;
      start = comma + 1;
    }
  }
  return out;
}

// --selector, --nodelist, --exclude and --topology into node_selector, nodelist, exclude
// and topology; node lists may be Slurm hostlists (n[1-4]). The server checks the
// names and the rest.
Status add_node_constraints(const SubmitOptions& o, json& j) {
  if (!o.selector.empty()) {
    auto items = comma_items(o.selector, "--selector", "KEY=VALUE pairs");
    if (!items) return items.error();
    json selector = json::object();
    for (const std::string& item : *items) {
      auto label = api::parse_label(item, "--selector");
      if (!label) return label.error();
      selector[label->first] = label->second;
    }
    j["node_selector"] = std::move(selector);
  }
  for (const auto& [flag, key, values] :
       {std::tuple{"--nodelist", "nodelist", &o.nodelist}, std::tuple{"--exclude", "exclude", &o.exclude}}) {
    if (values->empty()) continue;
    auto names = expand_hostlists(*values, flag);
    if (!names) return names.error();
    j[key] = std::move(*names);
  }
  if (!o.reservation.empty()) j["reservation"] = o.reservation;
  if (o.topology) {
    const size_t eq = o.topology->find('=');
    const std::string kind = o.topology->substr(0, eq);
    if (eq == std::string::npos || (kind != "required" && kind != "preferred"))
      return Error::invalid("--topology: expected required=KEY or preferred=KEY, got '" + *o.topology + "'",
                            "--topology");
    const std::string key = o.topology->substr(eq + 1);
    if (std::string why = api::label_key_error(key); !why.empty())
      return Error::invalid("--topology: " + key + " " + why, "--topology");
    j["topology"] = {{kind, key}};
  }
  return ok_status();
}

// A whole non-negative number of at most 9 digits, or nullopt.
std::optional<int> small_number(const std::string& s) {
  if (s.empty() || s.size() > 9) return std::nullopt;
  int v = 0;
  for (char c : s) {
    if (c < '0' || c > '9') return std::nullopt;
    v = v * 10 + (c - '0');
  }
  return v;
}

// Slurm's --array: INDICES or INDICES%P. "0-B" -> {"count": B+1}; any other index list
// ("5-20", "1,3,7-9", "0-30:10") -> {"indices": ...}; with "parallel": P after a '%'.
// The index list is checked here; the server checks the limits again.
Result<json> array_request(const std::string& v) {
  auto bad = [&](const std::string& why) {
    return Error::invalid("--array: " + why + ", got '" + v.substr(0, 64) + "'", "--array");
  };
  const size_t pct = v.find('%');
  const std::string list = v.substr(0, pct);
  auto indices = api::parse_array_indices(list);
  if (!indices) return bad(indices.error().message + " (e.g. 0-99%8, 5-20 or 1,3,7-9%2)");
  const size_t dash = list.find('-');
  json a;
  if (dash != std::string::npos && small_number(list.substr(0, dash)) == 0 && small_number(list.substr(dash + 1)))
    a = json{{"count", indices->size()}};
  else
    a = json{{"indices", list}};
  if (pct != std::string::npos) {
    auto parallel = small_number(v.substr(pct + 1));
    if (!parallel) return bad("expected a number of elements after %");
    a["parallel"] = *parallel;
  }
  return a;
}
// --mount SOURCE:TARGET[:ro]: {"source", "target", "read_only"}. Relative sources are
// the node's business (the server refuses them); the split is on ':' only.
Result<json> mount_request(const std::string& v) {
  const size_t first = v.find(':');
  const size_t second = first == std::string::npos ? first : v.find(':', first + 1);
  std::string source = v.substr(0, first), target, mode;
  if (first != std::string::npos)
    target = v.substr(first + 1, second == std::string::npos ? second : second - first - 1);
  if (second != std::string::npos) mode = v.substr(second + 1);
  if (source.empty() || target.empty() || (second != std::string::npos && mode != "ro" && mode != "rw"))
    return Error::invalid("--mount: expected SOURCE:TARGET or SOURCE:TARGET:ro, got '" + v.substr(0, 64) + "'",
                          "--mount");
  json m = {{"source", source}, {"target", target}};
  if (mode == "ro") m["read_only"] = true;
  return m;
}
}  // namespace

Result<int64_t> parse_memory_mib(const std::string& text) {
  const auto bad = [&] {
    return Error::invalid("expected a size like 4096 (MiB), 512M, 64G or 1T, got '" + text.substr(0, 64) + "'");
  };
  size_t digits = 0;
  while (digits < text.size() && digits < 12 && std::isdigit(static_cast<unsigned char>(text[digits]))) ++digits;
  if (digits == 0) return bad();
  const int64_t n = std::stoll(text.substr(0, digits));
  std::string unit = text.substr(digits);
  for (const char* tail : {"iB", "B"})
    if (unit.size() > std::strlen(tail) &&
        unit.compare(unit.size() - std::strlen(tail), std::string::npos, tail) == 0) {
      unit.resize(unit.size() - std::strlen(tail));
      break;
    }
  if (unit.empty() || unit == "M" || unit == "m") return n;
  if (unit == "G" || unit == "g") return n * 1024;
  if (unit == "T" || unit == "t") return n * 1024 * 1024;
  return bad();
}

namespace {
// --signal NAME[@BEFORE], Slurm's form: {"name", "before_s"} (the server checks the
// name and that BEFORE is within the time limit). BEFORE is a duration; without it the
// server's default (60 s).
Result<json> warning_signal_json(const std::string& text) {
  const auto at = text.find('@');
  std::string name = text.substr(0, at);
  if (name.rfind("SIG", 0) == 0) name = name.substr(3);
  if (name.empty()) return Error::invalid("--signal: expected NAME[@SECONDS], e.g. USR1@120", "--signal");
  json j = {{"name", name}};
  if (at == std::string::npos) return j;
  auto d = parse_duration(text.substr(at + 1));
  if (!d) return d.error().wrap("--signal");
  j["before_s"] = *d;
  return j;
}
}  // namespace

Result<json> build_job_request(const SubmitOptions& o, const std::string& cwd) {
  if (o.command.empty())
    return Error::invalid("a command is required after '--' (tessel submit [flags] -- CMD ARGS...)", "command");
  json j = json::object();
  j["command"] = o.command;
  if (o.name) j["name"] = *o.name;
  if (o.devices) j["devices"] = *o.devices;
  if (o.nodes) j["nodes"] = *o.nodes;
  if (o.per_device) j["tasks_per_node"] = "device";
  if (o.priority) j["priority"] = *o.priority;
  if (o.retries) j["max_retries"] = *o.retries;
  if (o.time_limit) {
    auto d = parse_duration(*o.time_limit);
    if (!d) return d.error().wrap("--time-limit");
    if (*d == 0) return Error::invalid("--time-limit: must be at least 1s", "--time-limit");
    j["time_limit_s"] = *d;
  }
  if (o.kill_grace) {
    auto d = parse_duration(*o.kill_grace);
    if (!d) return d.error().wrap("--kill-grace");
    j["kill_grace_s"] = *d;
  }
  if (o.signal) {
    auto w = warning_signal_json(*o.signal);
    if (!w) return w.error();
    j["signal"] = std::move(*w);
  }
  if (!o.env.empty()) {
    json env = json::object();
    for (const auto& kv : o.env) {
      auto eq = kv.find('=');
      if (eq == std::string::npos || eq == 0)
        return Error::invalid("--env: expected KEY=VALUE, got '" + kv.substr(0, 64) + "'", "--env");
      env[kv.substr(0, eq)] = kv.substr(eq + 1);
    }
    j["env"] = std::move(env);
  }
  if (o.workdir) {
    std::filesystem::path p(*o.workdir);
    if (p.empty()) return Error::invalid("--workdir: must not be empty", "--workdir");
    if (p.is_relative()) p = std::filesystem::path(cwd) / p;
    j["workdir"] = p.lexically_normal().string();
  }
  if (o.vendor) j["vendor"] = *o.vendor;
  if (o.model) j["model"] = *o.model;
  if (o.driver_version) j["driver_version"] = *o.driver_version;
  if (o.project) j["project"] = *o.project;
  if (o.preemptible) j["preemptible"] = true;
  if (o.cpus) j["cpus"] = *o.cpus;
  if (o.memory) {
    auto mib = parse_memory_mib(*o.memory);
    if (!mib) return mib.error().wrap("--memory");
    j["memory_mib"] = *mib;  // The server checks the range.
  }
  if (o.image) j["image"] = *o.image;  // The server checks the reference.
  if (o.image_pull) j["image_pull"] = *o.image_pull;
  if (!o.mounts.empty()) {
    json mounts = json::array();
    for (const auto& m : o.mounts) {
      auto mount = mount_request(m);
      if (!mount) return mount.error();
      mounts.push_back(std::move(*mount));
    }
    j["mounts"] = std::move(mounts);
  }
  if (o.shm_size) {
    auto mib = parse_memory_mib(*o.shm_size);
    if (!mib) return mib.error().wrap("--shm-size");
    j["shm_size_mib"] = *mib;
  }
  for (const auto& [flag, key, values] :
       {std::tuple{"--after-ok", "after_ok", &o.after_ok}, std::tuple{"--after-any", "after_any", &o.after_any},
        std::tuple{"--after-not-ok", "after_not_ok", &o.after_not_ok}}) {
    if (values->empty()) continue;
    auto ids = job_ids(*values, flag);
    if (!ids) return ids.error();
    j[key] = std::move(*ids);
  }
  if (o.array) {
    auto a = array_request(*o.array);
    if (!a) return a.error();
    j["array"] = std::move(*a);
  }
  if (auto s = add_node_constraints(o, j); !s) return s.error();
  return j;
}

}  // namespace tessel::cli
