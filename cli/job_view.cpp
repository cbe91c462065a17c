#include "tessel/cli/job_view.hpp"

#include <algorithm>
#include <cstdio>
#include <sstream>
#include <utility>

#include <nlohmann/json.hpp>

#include "tessel/api/job.hpp"
#include "tessel/cli/duration.hpp"
#include "tessel/cli/json_get.hpp"
#include "tessel/cli/table.hpp"

namespace tessel::cli {

using nlohmann::json;

namespace {

std::string age_since(const json& j, const char* key, int64_t now_ms) {
  auto t = api::parse_rfc3339(get_string(j, key));
  if (!t) return "-";
  return format_age((now_ms - *t) / 1000);
}

std::string node_list(const json& job) {
  std::string out;
  const auto& allocs = get_field(job, "allocations");
  if (!allocs.is_array()) return out;
  for (const auto& a : allocs) {
    auto n = get_string(a, "node");
    if (n.empty()) continue;
    if (!out.empty()) out += ',';
    out += n;
  }
  return out;
}

// A node_selector as "rack=r7,fabric=ib"; "" for none.
std::string selector_text(const json& selector) {
  std::string text;
  if (selector.is_object())
    for (const auto& [k, v] : selector.items())
      if (v.is_string()) text += (text.empty() ? "" : ",") + k + "=" + v.get<std::string>();
  return text;
}

std::string ids(const json& arr) {
  if (!arr.is_array()) return "-";
  std::string out;
  for (const auto& v : arr) {
    if (!out.empty()) out += ',';
    out += v.is_string() ? v.get<std::string>() : v.dump();
  }
  return out.empty() ? "-" : out;
}

std::string last_column(const json& job) {
  auto state = get_string(job, "state");
  auto reason = get_string(job, "reason");
  if (state == "pending") {
    // "#3 start ~2026-12-01T10:00:00.000Z (reason)": queue position, then the backfill plan's estimate.
    std::string out;
    if (auto pos = get_int(job, "queue_position"); pos && *pos > 0) out = "#" + std::to_string(*pos);
    if (auto start = get_string(job, "estimated_start"); !start.empty())
      out += (out.empty() ? "" : " ") + std::string("start ~") + start;
    if (!reason.empty()) out += (out.empty() ? "(" : " (") + reason + ")";
    return out;
  }
  std::string out = node_list(job);
  if (state == "failed" || state == "cancelled") {
    std::string why = reason;
    if (auto code = get_int(job, "exit_code"); code && why.empty()) why = "exit " + std::to_string(*code);
    if (!why.empty()) out += (out.empty() ? "(" : " (") + why + ")";
  }
  return out;
}

// A parent: "100 elements, at most 8 at once: 90 pending, 8 running, 2 succeeded".
// An element: "element 7 of j-00000042 (100 elements)".
std::string array_line(const json& job) {
  const auto& a = get_field(job, "array");
  if (a.is_object()) {
    std::string out = get_text(a, "count") + " elements, at most " + get_text(a, "parallel") + " at once";
    std::string counts;
    const auto& states = get_field(a, "states");
    for (const char* st : {"pending", "assigned", "running", "succeeded", "failed", "cancelled"}) {
      auto n = get_int(states, st);
      if (!n || *n == 0) continue;
      counts += (counts.empty() ? ": " : ", ") + std::to_string(*n) + " " + st;
    }
    return out + counts;
  }
  auto parent = get_string(job, "array_id");
  if (parent.empty()) return "";
  return "element " + get_text(job, "array_index") + " of " + parent + " (" +
         get_text(get_field(get_field(job, "spec"), "array"), "count") + " elements)";
}

}  // namespace

bool job_is_terminal(const json& job) {
  auto s = api::parse_job_state(get_string(job, "state"));
  return s && api::is_terminal(*s);
}

std::string quote_command(const json& argv) {
  if (!argv.is_array()) return "";
  std::string out;
  for (const auto& a : argv) {
    std::string s = a.is_string() ? a.get<std::string>() : a.dump();
    bool plain = !s.empty();
    for (char c : s) {
      if (!(std::isalnum(static_cast<unsigned char>(c)) ||
            std::string_view("-_./=:,+@%").find(c) != std::string_view::npos))
        plain = false;
    }
    if (!out.empty()) out += ' ';
    if (plain) {
      out += s;
    } else {
      out += '\'';
      for (char c : s) {
        if (c == '\'')
          out += "'\\''";
        else
          out += c;
      }
      out += '\'';
    }
  }
  return out;
}

std::string render_jobs_table(const json& jobs, int64_t now_ms) {
  // PREEMPTED (times the job was preempted, like kubectl's RESTARTS) only when a listed
  // job was: most fleets never preempt, and the table stays narrow there.
  bool any_preempted = false;
  if (jobs.is_array())
    for (const auto& j : jobs) any_preempted = any_preempted || get_int(j, "preemptions").value_or(0) > 0;
  std::vector<std::string> headers = {"ID", "NAME", "USER", "STATE", "PRIO", "CARDS", "NODES", "AGE"};
  if (any_preempted) headers.emplace_back("PREEMPTED");
  headers.emplace_back("REASON/NODELIST");
  Table t(std::move(headers));
  if (jobs.is_array()) {
    for (const auto& j : jobs) {
      const auto& spec = get_field(j, "spec");
      auto devices = get_int(spec, "devices").value_or(0);
      auto nodes = get_int(spec, "nodes").value_or(1);
      std::vector<std::string> row = {get_string(j, "id"),
                                      get_string(j, "name"),
                                      get_string(j, "user"),
                                      get_string(j, "state"),
                                      std::to_string(get_int(spec, "priority").value_or(0)),
                                      std::to_string(devices * nodes),
                                      std::to_string(nodes),
                                      age_since(j, "submitted_at", now_ms)};
      if (any_preempted) row.push_back(std::to_string(get_int(j, "preemptions").value_or(0)));
      row.push_back(last_column(j));
      t.add_row(std::move(row));
    }
  }
  return t.render();
}

namespace {

// The "Allocations:" table of `tessel show`: cards per node rank, and the CPUs and
// memory held when the scheduler places them.
void render_allocations(const json& allocs, std::ostream& o) {
  if (!allocs.is_array() || allocs.empty()) return;
  o << "Allocations:\n";
  // CPUs and memory held per node, from a scheduler that places them.
  const bool held = std::any_of(allocs.begin(), allocs.end(), [](const json& a) {
    return get_int(a, "cpus").has_value() || get_int(a, "memory_mib").has_value();
  });
  Table t(held ? std::vector<std::string>{"  RANK", "NODE", "MODULE_IDS", "INDICES", "CPUS", "MEMORY"}
               : std::vector<std::string>{"  RANK", "NODE", "MODULE_IDS", "INDICES"});
  for (const auto& a : allocs) {
    std::vector<std::string> row{"  " + get_text(a, "rank"), get_string(a, "node"), ids(get_field(a, "module_ids")),
                                 ids(get_field(a, "indices"))};
    if (held) {
      auto mib = get_int(a, "memory_mib");
      row.push_back(get_int(a, "cpus") ? get_text(a, "cpus") : "-");
      row.push_back(mib ? std::to_string(*mib) + " MiB" : "-");
    }
    t.add_row(row);
  }
  o << t.render();
}

// The job's event history as a table under "History:"; nothing when it has none.
void render_history(const json& events, std::ostringstream& o) {
  if (!events.is_array() || events.empty()) return;
  o << "History:\n";
  Table t({"  TIME", "EVENT", "ATTEMPT", "NODES", "REASON"});
  for (const auto& e : events) {
    std::string reason = get_string(e, "reason");
    if (auto code = get_int(e, "exit_code")) {
      std::string exit = "exit ";
      exit += std::to_string(*code);
      if (reason.empty()) {
        reason = exit;
      } else {
        reason += " (";
        reason += exit;
        reason += ')';
      }
    }
    // A user's action names who: "held by alice".
    std::string event = get_string(e, "event");
    if (auto by = get_string(e, "by"); !by.empty()) event += " by " + by;
    t.add_row({"  " + get_string(e, "at"), printable(event), get_text(e, "attempt"), ids(get_field(e, "nodes")),
               printable(reason)});
  }
  o << t.render();
}

}  // namespace

std::string render_job_detail(const json& job, int64_t now_ms) {
  std::ostringstream o;
  const auto& spec = get_field(job, "spec");
  auto line = [&](const char* key, const std::string& value) {
    if (!value.empty()) o << key << ": " << printable(value) << '\n';
  };
  auto when = [&](const char* key) {
    auto s = get_string(job, key);
    if (s.empty()) return s;
    return s + " (" + age_since(job, key, now_ms) + " ago)";
  };
  line("ID", get_string(job, "id"));
  line("Name", get_string(job, "name"));
  line("User", get_string(job, "user"));
  line("State", get_string(job, "state"));
  line("Reason", get_string(job, "reason"));
  line("Held by", get_string(job, "held_by"));
  line("Queue position", get_text(job, "queue_position"));
  line("Estimated start", get_string(job, "estimated_start"));
  line("Project", get_string(spec, "project"));
  line("Array", array_line(job));
  if (get_bool(spec, "preemptible", false)) line("Preemptible", "yes");
  line("Exit code", get_text(job, "exit_code"));
  line("Attempt", get_text(job, "attempt"));
  if (auto n = get_int(job, "preemptions"); n && *n > 0) {
    std::string text = std::to_string(*n);
    if (auto at = when("last_preempted_at"); !at.empty()) {
      text += ", last " + at;
      if (auto by = get_string(job, "last_preempted_by"); !by.empty()) text += " by " + by;
    }
    line("Preemptions", text);
  }
  line("Command", quote_command(get_field(spec, "command")));
  line("Workdir", get_string(spec, "workdir"));
  if (auto image = get_string(spec, "image"); !image.empty())
    line("Image", image + (get_string(spec, "image_pull") == "always" ? " (pulled every time)" : ""));
  if (const auto& mounts = get_field(spec, "mounts"); mounts.is_array())
    for (const auto& m : mounts)
      line("Mount", get_string(m, "source") + " -> " + get_string(m, "target") +
                        (get_bool(m, "read_only", false) ? " (read-only)" : ""));
  if (auto shm = get_int(spec, "shm_size_mib")) line("Shm size", std::to_string(*shm) + " MiB");
  line("Devices per node", get_text(spec, "devices"));
  line("Nodes", get_text(spec, "nodes"));
  line("Tasks per node", get_text(spec, "tasks_per_node"));
  line("Priority", get_text(spec, "priority"));
  line("Max retries", get_text(spec, "max_retries"));
  if (auto tl = get_int(spec, "time_limit_s")) line("Time limit", format_duration(*tl));
  if (auto kg = get_int(spec, "kill_grace_s")) line("Kill grace", format_duration(*kg));
  line("Vendor", get_string(spec, "vendor"));
  line("Model", get_string(spec, "model"));
  line("Node selector", selector_text(get_field(spec, "node_selector")));
  line("Topology", selector_text(get_field(spec, "topology")));
  for (const auto& [label, key] :
       {std::pair{"Nodelist", "nodelist"}, std::pair{"Exclude", "exclude"}, std::pair{"After ok", "after_ok"},
        std::pair{"After any", "after_any"}, std::pair{"After not ok", "after_not_ok"}}) {
    const auto& deps = get_field(spec, key);
    if (deps.is_array() && !deps.empty()) line(label, ids(deps));
  }
  line("Submitted", when("submitted_at"));
  line("Started", when("started_at"));
  line("Finished", when("finished_at"));
  // What its tasks used (the last ended attempt), as sacct's TotalCPU and MaxRSS.
  if (const auto& cpu = get_field(job, "cpu_seconds"); cpu.is_number()) {
    char buf[64];
    std::snprintf(buf, sizeof buf, "%.1f s", cpu.get<double>());
    line("CPU time", buf);
  }
  if (auto rss = get_int(job, "max_rss_mib")) line("Peak memory", std::to_string(*rss) + " MiB");
  auto master = get_string(job, "master_addr");
  if (!master.empty()) line("Master", master + ":" + get_text(job, "master_port"));
  line("Endpoint", get_string(job, "endpoint"));
  const auto& env = get_field(spec, "env");
  if (env.is_object() && !env.empty()) {
    o << "Env:\n";
    for (const auto& [k, v] : env.items())
      o << "  " << printable(k + "=" + (v.is_string() ? v.get<std::string>() : v.dump())) << '\n';
  }
  render_allocations(get_field(job, "allocations"), o);
  render_history(get_field(job, "events"), o);
  return o.str();
}

}  // namespace tessel::cli
