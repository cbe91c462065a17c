// A node cut off from the scheduler: its agent runs in a network namespace of
// the test's own, linked to the host by a veth pair (10.213.N.1 host side, where
// the scheduler listens with --insecure; 10.213.N.2 in the namespace). Taking
// the host end down partitions the node: it must go down and its job requeue
// (max_retries 1). When the link returns, the stale task must be killed before
// its cards are given to the new attempt. Needs root and iproute2 (ROOT_).
#include <unistd.h>

#include <fstream>

#include <gtest/gtest.h>

#include "chaos_cluster.hpp"

namespace tessel::chaos {
namespace {

// The namespace and veth pair, deleted in every path.
class NetnsLink {
 public:
  explicit NetnsLink(const TempDir& dir) : log_(dir.str("ip.log")) {
    const int id = static_cast<int>(::getpid());
    ns = "tchaos" + std::to_string(id);
    host_if = "tcvh" + std::to_string(id % 10000000);
    ns_if = "tcvn" + std::to_string(id % 10000000);
    const std::string net = "10.213." + std::to_string(id % 250 + 1);
    host_ip = net + ".1";
    ns_ip = net + ".2";
    std::vector<std::vector<std::string>> steps = {
        {"ip", "netns", "add", ns},
        {"ip", "link", "add", host_if, "type", "veth", "peer", "name", ns_if},
        {"ip", "link", "set", ns_if, "netns", ns},
        {"ip", "addr", "add", host_ip + "/24", "dev", host_if},
        {"ip", "link", "set", host_if, "up"},
        {"ip", "netns", "exec", ns, "ip", "addr", "add", ns_ip + "/24", "dev", ns_if},
        {"ip", "netns", "exec", ns, "ip", "link", "set", ns_if, "up"},
        {"ip", "netns", "exec", ns, "ip", "link", "set", "lo", "up"},
    };
    for (const auto& s : steps) {
      if (run_and_wait(s, log_) != 0) {
        error = "'" + join(s) + "' failed: " + tail();
        return;
      }
    }
    ok = true;
  }
  ~NetnsLink() {
    run_and_wait({"ip", "link", "del", host_if}, log_);
    run_and_wait({"ip", "netns", "del", ns}, log_);
  }
  bool set_link(bool up) { return run_and_wait({"ip", "link", "set", host_if, up ? "up" : "down"}, log_) == 0; }

  std::string ns, host_if, ns_if, host_ip, ns_ip, error;
  bool ok = false;

 private:
  static std::string join(const std::vector<std::string>& v) {
    std::string s;
    for (const auto& a : v) s += (s.empty() ? "" : " ") + a;
    return s;
  }
  std::string tail() const {
    auto lines = read_lines(log_);
    return lines.empty() ? "" : lines.back();
  }
  std::string log_;
};

TEST(ChaosNetwork, ROOT_PartitionedNodeGoesDownJobRequeuesStaleTaskKilledBeforeCardsReused) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root for ip netns";
  if (::access("/usr/sbin/ip", X_OK) != 0) GTEST_SKIP() << "no /usr/sbin/ip (iproute2)";
  TempDir dir("netns");
  NetnsLink link(dir);
  if (!link.ok) GTEST_SKIP() << "cannot build a network namespace here: " << link.error;

  Child sched =
      start_scheduler(dir, "1", dir.str("tessel.db"), link.host_ip + ":0", {"--insecure", "--heartbeat-timeout", "2"});
  const int port = sched.wait_listening();
  ASSERT_GT(port, 0) << sched.stderr_text();
  Api api(port, link.host_ip);
  AgentSpec island = agent_spec("island", "http://" + link.host_ip + ":" + std::to_string(port));
  island.listen = link.ns_ip + ":0";
  island.address = link.ns_ip;
  island.prefix = {"/usr/sbin/ip", "netns", "exec", link.ns};
  Child agent = start_agent(dir, island);
  ASSERT_TRUE(wait_nodes(api, {"island"}, "ready")) << agent.stderr_text();

  // Each attempt records its pid, notes any other attempt still alive, then runs
  // until the `go` file exists. All 8 cards: the new attempt can only reuse them.
  const std::string pids = dir.str("pids"), log = dir.str("attempts.log"), go = dir.str("go");
  std::filesystem::create_directories(pids);
  const std::string script = "echo $$ > " + pids + "/$TESSEL_ASSIGNMENT_ID; echo \"start $TESSEL_ASSIGNMENT_ID\" >> " +
                             log + "; for f in " + pids + "/*; do [ \"$f\" = " + pids +
                             "/$TESSEL_ASSIGNMENT_ID ] && continue; kill -0 $(cat $f) 2>/dev/null && echo \"overlap "
                             "$TESSEL_ASSIGNMENT_ID with $f\" >> " +
                             log + "; done; while [ ! -e " + go + " ]; do sleep 0.05; done";
  auto r = api.post("/v1/jobs", shell_job(script, 8, 1));
  ASSERT_EQ(r.status, 201) << r.body.dump();
  const std::string id = r.body["id"];
  ASSERT_TRUE(eventually([&] { return read_lines(log).size() == 1; }, 20s)) << agent.stderr_text();
  // The task writes its line before the agent's report of it reaches the scheduler.
  ASSERT_TRUE(eventually([&] { return api.job_state(id) == "running"; }, 20s)) << api.job(id)->dump();

  // Cut the node off: it goes down and the job goes back to the queue.
  ASSERT_TRUE(link.set_link(false));
  ASSERT_TRUE(wait_nodes(api, {"island"}, "down", 20s)) << sched.stderr_text();
  ASSERT_TRUE(eventually(
      [&] {
        auto j = api.job(id);
        return j && j->value("state", "") == "pending" && j->value("attempt", 0) >= 1;
      },
      20s))
      << api.job(id)->dump();
  EXPECT_EQ(read_lines(log).size(), 1u) << "a new attempt started while the node was unreachable";

  // The link returns: the stale attempt must die before the cards are reused.
  ASSERT_TRUE(link.set_link(true));
  ASSERT_TRUE(eventually([&] { return api.job_state(id) == "running"; }, 30s)) << api.job(id)->dump() << "\n"
                                                                               << sched.stderr_text();
  ASSERT_TRUE(eventually([&] { return read_lines(log).size() == 2; }, 20s));
  EXPECT_EQ(read_lines(log), (std::vector<std::string>{"start " + id + ".0.0", "start " + id + ".1.0"}))
      << "attempt 1 must start once, after attempt 0 is gone (no 'overlap' line)";

  std::ofstream(go).put('\n');
  ASSERT_TRUE(eventually([&] { return api.job_state(id) == "succeeded"; }, 20s)) << api.job(id)->dump();
  agent.kill9();  // Before the namespace goes.
}

}  // namespace
}  // namespace tessel::chaos
