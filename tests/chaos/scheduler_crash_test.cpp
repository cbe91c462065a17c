// kill -9 the scheduler while clients submit and agents complete short jobs;
// restart it on the same DB and port. Every acknowledged (201) job must still be
// there and finish, no attempt may run twice, and no card may be double-booked.
#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstdio>
#include <mutex>
#include <thread>

#include <gtest/gtest.h>

#include "chaos_cluster.hpp"

namespace tessel::chaos {
namespace {

// Submits jobs until `stop`, recording the ids acknowledged with 201.
class Submitter {
 public:
  Submitter(const Api& api, json spec_a, json spec_b) : api_(api), a_(std::move(spec_a)), b_(std::move(spec_b)) {}
  void start(int threads) {
    for (int t = 0; t < threads; ++t)
      threads_.emplace_back([this, t] {
        for (int i = 0; !stop_; ++i) {
          if (acked() >= max_) {  // Enough queued for this phase: keep the run short.
            std::this_thread::sleep_for(10ms);
            continue;
          }
          auto r = api_.post("/v1/jobs", ((i + t) % 2) ? a_ : b_);
          if (r.status == 201) {
            std::lock_guard lk(mu_);
            acked_.push_back(r.body["id"].get<std::string>());
          } else if (r.status == 0) {
            ++refused_;
            std::this_thread::sleep_for(20ms);  // Scheduler down: retry pace, not a wait.
          }
        }
      });
  }
  void stop() {
    stop_ = true;
    for (auto& t : threads_) t.join();
    threads_.clear();
    stop_ = false;
  }
  void set_max(size_t m) { max_ = m; }
  size_t acked() {
    std::lock_guard lk(mu_);
    return acked_.size();
  }
  std::vector<std::string> ids() {
    std::lock_guard lk(mu_);
    return acked_;
  }

 private:
  const Api& api_;
  json a_, b_;
  std::atomic<bool> stop_{false};
  std::atomic<int> refused_{0};
  std::atomic<size_t> max_{SIZE_MAX};
  std::mutex mu_;
  std::vector<std::string> acked_;
  std::vector<std::thread> threads_;
};

// Within one GET /v1/nodes answer, the cards a job holds on a node must form one
// valid group of at most 2 cards (every job here asks for 1 or 2): a card handed
// to a second job would show as a larger or invalid set.
std::string check_node_holders(const std::vector<json>& nodes) {
  for (const auto& n : nodes) {
    std::map<std::string, std::vector<int>> held;
    for (const auto& d : n["inventory"].value("devices", json::array()))
      if (d.contains("job") && d["job"].is_string()) held[d["job"].get<std::string>()].push_back(d["module_id"]);
    for (auto& [job, mods] : held) {
      std::sort(mods.begin(), mods.end());
      bool ok = mods.size() == 1 || (mods.size() == 2 && mods[0] % 2 == 0 && mods[1] == mods[0] + 1);
      if (!ok) return n.value("name", "") + ": job " + job + " holds " + json(mods).dump();
    }
  }
  return "";
}

// Samples the job list while the cluster runs; records the first double booking.
class BookingMonitor {
 public:
  explicit BookingMonitor(const Api& api) : api_(api) {
    thread_ = std::thread([this] {
      while (!stop_) {
        auto jobs = api_.all_jobs();
        std::string d = find_double_booking(jobs);
        if (d.empty()) d = check_node_holders(api_.nodes());
        if (!d.empty()) {
          std::lock_guard lk(mu_);
          if (first_.empty()) first_ = d;
        }
        std::this_thread::sleep_for(50ms);  // Sampling period.
      }
    });
  }
  ~BookingMonitor() { stop(); }
  void stop() {
    stop_ = true;
    if (thread_.joinable()) thread_.join();
  }
  std::string first() {
    std::lock_guard lk(mu_);
    return first_;
  }

 private:
  const Api& api_;
  std::atomic<bool> stop_{false};
  std::mutex mu_;
  std::string first_;
  std::thread thread_;
};

TEST(ChaosScheduler, Kill9DuringSubmissionsAndCompletionsLosesNothingRunsNothingTwice) {
  TempDir dir("sched-kill");
  const std::string db = dir.str("tessel.db"), runs = dir.str("runs.txt");
  Child sched = start_scheduler(dir, "1", db, "127.0.0.1:0", {"--heartbeat-timeout", "30"});
  const int port = sched.wait_listening();
  ASSERT_GT(port, 0) << sched.stderr_text();
  Api api(port);
  const std::string url = "http://127.0.0.1:" + std::to_string(port);
  Child a = start_agent(dir, agent_spec("chaos-a", url));
  Child b = start_agent(dir, agent_spec("chaos-b", url));
  ASSERT_TRUE(wait_nodes(api, {"chaos-a", "chaos-b"}, "ready")) << a.stderr_text();

  // Each run appends "<assignment id>" (= job.attempt.rank) to runs.txt; the path
  // names the temp dir, so leftover tasks are found and killed at the end.
  json quick = shell_job("echo \"$TESSEL_ASSIGNMENT_ID\" >> " + runs, 1);
  json slow = shell_job("echo \"$TESSEL_ASSIGNMENT_ID\" >> " + runs + "; sleep 0.2", 2);
  Submitter sub(api, quick, slow);
  BookingMonitor monitor(api);
  sub.set_max(120);
  sub.start(3);

  // Let jobs flow and complete, then kill -9 in the middle of it all.
  ASSERT_TRUE(eventually([&] { return sub.acked() >= 40 && read_lines(runs).size() >= 15; }, 30s))
      << "acked " << sub.acked() << ", runs " << read_lines(runs).size() << "\n"
      << sched.stderr_text();
  sched.kill9();
  const size_t acked_before = sub.acked();
  sub.set_max(acked_before + 40);

  // Same DB, same port (agents know the URL). Submitters keep retrying meanwhile.
  sched = start_scheduler(dir, "2", db, "127.0.0.1:" + std::to_string(port), {"--heartbeat-timeout", "30"});
  ASSERT_EQ(sched.wait_listening(), port) << sched.stderr_text();
  ASSERT_TRUE(eventually([&] { return sub.acked() >= acked_before + 20; }, 30s)) << sched.stderr_text();
  sub.stop();

  const auto ids = sub.ids();
  // Every acknowledged job exists and reaches a terminal state, successfully.
  ASSERT_TRUE(eventually(
      [&] {
        for (const auto& j : api.all_jobs()) {
          auto st = j.value("state", "");
          if (st == "pending" || st == "assigned" || st == "running") return false;
        }
        return true;
      },
      45s))
      << sched.stderr_text();
  monitor.stop();
  std::map<std::string, json> by_id;
  for (auto& j : api.all_jobs()) by_id[j["id"].get<std::string>()] = j;
  for (const auto& id : ids) {
    ASSERT_TRUE(by_id.count(id)) << "acknowledged job " << id << " lost after kill -9";
    EXPECT_EQ(by_id[id].value("state", ""), "succeeded") << by_id[id].dump();
  }

  // No attempt ran twice; every succeeded job ran.
  std::map<std::string, int> seen;
  std::set<std::string> jobs_that_ran;
  for (const auto& line : read_lines(runs)) {
    ++seen[line];
    jobs_that_ran.insert(line.substr(0, line.find('.')));
  }
  for (const auto& [aid, n] : seen) EXPECT_EQ(n, 1) << "assignment " << aid << " ran " << n << " times";
  for (const auto& [id, j] : by_id) {
    if (j.value("state", "") == "succeeded") {
      EXPECT_TRUE(jobs_that_ran.count(id)) << id << " succeeded but never ran";
    }
  }
  std::printf("acknowledged %zu jobs (%zu before kill -9), %zu runs recorded\n", ids.size(), acked_before, seen.size());

  EXPECT_EQ(monitor.first(), "") << "double booking observed";
  // After it all, no card has a holder any more.
  for (const auto& n : api.nodes())
    for (const auto& d : n["inventory"].value("devices", json::array()))
      EXPECT_TRUE(d.value("job", json()).is_null()) << n.value("name", "") << ": " << d.dump();
}

}  // namespace
}  // namespace tessel::chaos
