#include "tessel/cli/job_commands.hpp"

#include <algorithm>
#include <set>

#include <nlohmann/json.hpp>

#include "tessel/cli/duration.hpp"
#include "tessel/cli/job_view.hpp"
#include "tessel/cli/json_get.hpp"

namespace tessel::cli {

using nlohmann::json;
using std::chrono::milliseconds;

namespace {
constexpr int kPageLimit = 200;
constexpr int kMaxPages = 100000;
constexpr milliseconds kFirstBackoff{250};
constexpr milliseconds kMaxBackoff{5000};
constexpr int kMaxConsecutiveTransportErrors = 5;
constexpr std::chrono::seconds kFollowIdleTimeout{60};
constexpr std::chrono::seconds kReadIdleTimeout{30};

std::string job_path(const std::string& id) { return "/v1/jobs/" + url_encode(id); }
}  // namespace

int cmd_submit(Session& s, const SubmitOptions& o) {
  auto body = build_job_request(o, s.env().cwd);
  if (!body) return s.usage("submit", body.error());
  auto* c = s.client("submit");
  if (!c) return kExitUsage;
  auto job = c->post("/v1/jobs", *body);
  if (!job) return s.fail("submit", job.error());
  if (s.json_output())
    s.print_json(*job);
  else
    s.env().out << get_string(*job, "id") << '\n';
  return kExitOk;
}

int cmd_jobs(Session& s, const JobsOptions& o) {
  auto* c = s.client("jobs");
  if (!c) return kExitUsage;
  json all = json::array();
  std::string after;
  std::set<std::string> seen_cursors;
  for (int page = 0; page < kMaxPages; ++page) {
    std::string q = "/v1/jobs?limit=" + std::to_string(kPageLimit);
    if (!o.state.empty()) q += "&state=" + url_encode(o.state);
    if (!o.user.empty()) q += "&user=" + url_encode(o.user);
    if (!after.empty()) q += "&after=" + url_encode(after);
    auto r = c->get(q);
    if (!r) return s.fail("jobs", r.error());
    const auto& jobs = get_field(*r, "jobs");
    if (!jobs.is_array()) return s.fail("jobs", Error{"server answer has no \"jobs\" array"});
    for (const auto& j : jobs) {
      if (o.state.empty() && !o.all && job_is_terminal(j)) continue;
      all.push_back(j);
    }
    after = get_string(*r, "next");
    if (after.empty()) break;
    if (!seen_cursors.insert(after).second)
      return s.fail("jobs", Error{"server repeated the paging cursor '" + after + "'"});
  }
  if (s.json_output())
    s.print_json(json{{"jobs", all}});
  else
    s.env().out << render_jobs_table(all, s.env().now_unix_ms());
  return kExitOk;
}

int cmd_show(Session& s, const std::string& id) {
  auto* c = s.client("show");
  if (!c) return kExitUsage;
  auto job = c->get(job_path(id));
  if (!job) return s.fail("show", job.error().wrap(id));
  // The state history; a scheduler too old to keep one shows the job without it.
  if (auto history = c->get(job_path(id) + "/events"); history && history->contains("events"))
    (*job)["events"] = (*history)["events"];
  if (s.json_output())
    s.print_json(*job);
  else
    s.env().out << render_job_detail(*job, s.env().now_unix_ms());
  return kExitOk;
}

int cmd_cancel(Session& s, const std::vector<std::string>& ids) { return cmd_control(s, "cancel", ids); }

int cmd_signal(Session& s, const std::string& id, const std::string& name) {
  auto* c = s.client("signal");
  if (!c) return kExitUsage;
  std::string sig = name;
  if (sig.rfind("SIG", 0) == 0) sig = sig.substr(3);  // SIGUSR1 as USR1, as scancel takes both.
  auto r = c->post(job_path(id) + "/signal", json{{"name", sig}});
  if (!r) return s.fail("signal", r.error().wrap(id));
  if (s.json_output())
    s.print_json(*r);
  else
    s.env().out << id << ": SIG" << sig << " sent to every rank\n";
  return kExitOk;
}

int cmd_update(Session& s, const UpdateOptions& o) {
  json body = json::object();
  if (o.priority) body["priority"] = *o.priority;
  if (o.name) body["name"] = *o.name;
  if (o.time_limit) {
    auto d = parse_duration(*o.time_limit);
    if (!d) return s.usage("update", d.error().wrap("--time-limit"));
    body["time_limit_s"] = *d;
  }
  if (body.empty()) return s.usage("update", Error::invalid("give --priority, --time-limit or --name"));
  auto* c = s.client("update");
  if (!c) return kExitUsage;
  auto r = c->patch(job_path(o.id), body);
  if (!r) return s.fail("update", r.error().wrap(o.id));
  if (s.json_output())
    s.print_json(*r);
  else
    s.env().out << o.id << ": updated (priority " << get_text(get_field(*r, "spec"), "priority") << ")\n";
  return kExitOk;
}

int cmd_control(Session& s, const std::string& action, const std::vector<std::string>& ids) {
  auto* c = s.client(action);
  if (!c) return kExitUsage;
  int rc = kExitOk;
  json answers = json::array();
  for (const auto& id : ids) {
    auto r = c->post(job_path(id) + "/" + action, json::object());
    if (!r) {
      rc = s.fail(action, r.error().wrap(id));
      continue;
    }
    if (s.json_output()) {
      answers.push_back(*r);
      continue;
    }
    // "j-1: cancelled", "j-2: pending (held by alice)".
    auto state = get_string(*r, "state");
    auto reason = get_string(*r, "reason");
    s.env().out << id << ": " << (state.empty() ? action + " requested" : state);
    if (action != "cancel" && state == "pending" && !reason.empty()) s.env().out << " (" << reason << ")";
    s.env().out << '\n';
  }
  if (s.json_output()) s.print_json(ids.size() == 1 && answers.size() == 1 ? answers[0] : answers);
  return rc;
}

int cmd_logs(Session& s, const LogsOptions& o) {
  auto* c = s.client("logs");
  if (!c) return kExitUsage;
  uint64_t offset = 0;
  milliseconds backoff = kFirstBackoff;
  int transport_errors = 0;
  auto sink = [&](std::string_view chunk) {
    s.env().out.write(chunk.data(), static_cast<std::streamsize>(chunk.size()));
    s.env().out.flush();
    return static_cast<bool>(s.env().out);
  };
  while (true) {
    std::string q = job_path(o.id) + "/logs?rank=" + std::to_string(o.rank);
    if (o.follow) q += "&follow=true";
    if (offset > 0) q += "&offset=" + std::to_string(offset);
    uint64_t before = offset;
    auto st = c->stream(q, sink, o.follow ? kFollowIdleTimeout : kReadIdleTimeout, offset);
    if (st) return kExitOk;  // The server ends a followed stream when the job is over.
    if (!o.follow || !c->last_failure_was_transport()) return s.fail("logs", st.error().wrap(o.id));
    // Following and the connection dropped or went quiet: resume where we were,
    // unless the job has ended meanwhile and everything was read.
    if (offset == before && ++transport_errors >= kMaxConsecutiveTransportErrors)
      return s.fail("logs", st.error().wrap(o.id));
    if (offset != before) transport_errors = 0;
    auto job = c->get(job_path(o.id));
    if (job && job_is_terminal(*job)) {
      std::string last = job_path(o.id) + "/logs?rank=" + std::to_string(o.rank) + "&offset=" + std::to_string(offset);
      auto fin = c->stream(last, sink, kReadIdleTimeout, offset);
      if (!fin) return s.fail("logs", fin.error().wrap(o.id));
      return kExitOk;
    }
    s.env().sleep(backoff);
    backoff = std::min(backoff * 2, kMaxBackoff);
  }
}

int exit_code_for_job(const json& job) {
  auto state = get_string(job, "state");
  if (state == "succeeded") return kExitOk;
  if (state == "failed") {
    auto code = get_int(job, "exit_code");
    if (!code || *code == 0) return kExitFailure;
    int c = static_cast<int>(*code & 0xff);  // As a shell sees it.
    return c == 0 ? kExitFailure : c;
  }
  return kExitFailure;  // cancelled
}

int cmd_wait(Session& s, const WaitOptions& o) {
  std::optional<milliseconds> deadline;
  if (o.timeout) {
    auto d = parse_duration(*o.timeout);
    if (!d) return s.usage("wait", d.error().wrap("--timeout"));
    deadline = s.env().monotonic() + milliseconds(*d * 1000);
  }
  auto* c = s.client("wait");
  if (!c) return kExitUsage;
  milliseconds backoff = kFirstBackoff;
  int transport_errors = 0;
  while (true) {
    auto job = c->get(job_path(o.id));
    if (job) {
      transport_errors = 0;
      if (job_is_terminal(*job)) {
        int rc = exit_code_for_job(*job);
        if (s.json_output()) {
          s.print_json(*job);
        } else {
          std::string line = o.id + ": " + get_string(*job, "state");
          if (auto code = get_int(*job, "exit_code")) line += " (exit " + std::to_string(*code) + ")";
          auto reason = get_string(*job, "reason");
          if (!reason.empty()) line += ": " + reason;
          (rc == kExitOk ? s.env().out : s.env().err) << line << '\n';
        }
        return rc;
      }
    } else if (!c->last_failure_was_transport() || ++transport_errors >= kMaxConsecutiveTransportErrors) {
      return s.fail("wait", job.error().wrap(o.id));
    }
    auto now = s.env().monotonic();
    if (deadline && now >= *deadline) {
      s.env().err << "tessel: wait: " << o.id << ": still not finished after " << *o.timeout << '\n';
      return kExitWaitTimeout;
    }
    milliseconds nap = backoff;
    if (deadline) nap = std::min(nap, *deadline - now);
    s.env().sleep(nap);
    backoff = std::min(backoff * 2, kMaxBackoff);
  }
}

}  // namespace tessel::cli
