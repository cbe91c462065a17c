// Where jobs run and what the agent's disk does to them, against the real binaries:
//   ClusterWorkdir.MissingWorkdir...      a `workdir` that does not exist fails the job
//                                         at launch with the reason.
//   ClusterWorkdir.ROOT_RunAs...          root: with --run-as nobody, the default working
//                                         directory is the task's own, writable by nobody
//                                         (under a state dir closed to it), and a workdir
//                                         closed to nobody fails the job.
//   ClusterWorkdir.ROOT_AgentWithout...   root: the agent refuses to start without --run-as,
//                                         so jobs never run as root by default.
//   ClusterDisk.ROOT_FullStateDir...      root: the agent's state dir on a small tmpfs of
//                                         the test's own, filled to ENOSPC: a launch there
//                                         fails with the reason and frees the cards, the
//                                         task that was running is reported "result not
//                                         recorded", the node is degraded (nothing placed)
//                                         until space is freed.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "cluster.hpp"
#include "files.hpp"
#include "temp_dir.hpp"
#include "tmpfs.hpp"

using namespace tessel::itest;
using nlohmann::json;
using namespace std::chrono_literals;

namespace {

std::string reason_of(const std::optional<json>& job) { return job ? job->value("reason", "") : ""; }

TEST(ClusterWorkdir, MissingWorkdirFailsTheJobAtLaunchWithTheReason) {
  Cluster c;
  c.start_scheduler();
  c.start_agent("n1");
  auto job = c.submit({{"command", {"pwd"}}, {"devices", 1}, {"workdir", "/nonexistent-tessel-workdir"}});
  auto done = c.wait_job(job["id"], {"failed", "succeeded"});
  ASSERT_TRUE(done);
  EXPECT_EQ((*done)["state"], "failed");
  EXPECT_EQ(reason_of(done), "failed to start: workdir /nonexistent-tessel-workdir: No such file or directory");
}

TEST(ClusterWorkdir, ROOT_AgentWithoutRunAsRefusesToStart) {
  if (::geteuid() != 0) GTEST_SKIP() << "the default concerns an agent running as root";
  tessel::testkit::TempDir dir;
  auto o = tessel::testkit::command({TESSEL_AGENT_BIN, "--scheduler", "http://127.0.0.1:9", "--node", "n1",
                                     "--state-dir", dir.str("state"), "--listen", "127.0.0.1:0"});
  o.stderr_path = dir.str("agent.err");
  tessel::testkit::Child agent(std::move(o));
  const int status = agent.wait();
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 2);
  const std::string err = tessel::testkit::read_file(dir.str("agent.err"));
  EXPECT_NE(err.find("running as root, jobs would too: give --run-as USER"), std::string::npos) << err;
}

TEST(ClusterWorkdir, ROOT_RunAsUserWritesItsDefaultWorkdirAndIsRefusedAClosedOne) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root for --run-as nobody";
  Cluster c;
  c.agent_args = {"--run-as", "nobody"};
  c.start_scheduler();
  c.start_agent("n1");
  // No workdir: the task's own directory, which nobody may write (the state dir above
  // it, this test's temp dir, is closed to nobody).
  auto job = c.submit({{"command", {"sh", "-c", "id -u > whoami && pwd"}}, {"devices", 1}});
  const std::string id = job["id"];
  auto done = c.wait_job(id, {"failed", "succeeded"});
  ASSERT_TRUE(done);
  EXPECT_EQ((*done)["state"], "succeeded") << done->dump() << c.log("n1", id);
  EXPECT_EQ(tessel::testkit::read_file(c.work_dir("n1", id) + "/whoami"), "65534\n");
  EXPECT_NE(c.log("n1", id).find(c.work_dir("n1", id)), std::string::npos) << c.log("n1", id);
  struct stat st {};
  ASSERT_EQ(::stat(c.work_dir("n1", id).c_str(), &st), 0);
  EXPECT_EQ(st.st_uid, 65534u);
  // A workdir root may enter but nobody may not: checked as nobody.
  const std::string closed = c.root() + "/closed";
  ASSERT_EQ(::mkdir(closed.c_str(), 0700), 0);
  auto refused = c.submit({{"command", {"pwd"}}, {"devices", 1}, {"workdir", closed}});
  auto r = c.wait_job(refused["id"], {"failed", "succeeded"});
  ASSERT_TRUE(r);
  EXPECT_EQ(reason_of(r), "failed to start: workdir " + closed + ": Permission denied");
}

// A job that waits for `go` (outside the state dir) and exits 0.
json gated_job(const std::string& go) {
  return {{"command", {"sh", "-c", "while [ ! -e " + go + " ]; do sleep 0.05; done"}}, {"devices", 1}};
}

// The job holding each card of `node` (module id -> job id).
std::map<int, std::string> holders(Cluster& c, const std::string& node) {
  std::map<int, std::string> out;
  const json n = c.get("/v1/nodes/" + node);
  if (!n.is_object()) return out;
  for (const auto& d : n.value("inventory", json::object()).value("devices", json::array()))
    if (d.value("job", json()).is_string()) out[d["module_id"].get<int>()] = d["job"];
  return out;
}

TEST(ClusterDisk, ROOT_FullStateDirFailsLaunchesFreesCardsDegradesTheNodeAndRecovers) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root to mount a tmpfs for the agent's state dir";
  Cluster c;
  c.heartbeat_timeout_s = 600;  // The agent is stopped for a moment below.
  // Heartbeats an hour apart: the node is degraded by the failed launch itself, and
  // ready again by the agent's probes while degraded, never by a heartbeat's timing.
  c.agent_args = {"--heartbeat-interval", "3600"};
  c.start_scheduler();
  tessel::testkit::TmpfsMount fs(c.state_dir("n1"), "1m");  // Unmounted before c goes.
  if (!fs.ok()) GTEST_SKIP() << "mount -t tmpfs failed: " << fs.error();
  c.start_agent("n1");
  ASSERT_TRUE(c.wait_node_state("n1", "ready"));
  const std::string go = c.root() + "/go";
  auto running = c.submit(gated_job(go));
  const std::string running_id = running["id"];
  ASSERT_TRUE(c.wait_job(running_id, {"running"}));

  // The disk fills while an assignment is on its way: stopped, the agent cannot have
  // noticed (it checks before each heartbeat) when the assignment reaches it.
  c.kill_agent("n1", SIGSTOP);
  tessel::testkit::fill_until_full(c.state_dir("n1") + "/filler");
  auto doomed = c.submit({{"command", {"true"}}, {"devices", 4}});
  const std::string doomed_id = doomed["id"];
  ASSERT_TRUE(c.wait_job(doomed_id, {"assigned"}));
  c.kill_agent("n1", SIGCONT);
  auto failed = c.wait_job(doomed_id, {"failed", "succeeded", "pending"});
  ASSERT_TRUE(failed);
  EXPECT_EQ((*failed)["state"], "failed");
  EXPECT_EQ(reason_of(failed).rfind("failed to start: agent state dir: ", 0), 0u) << reason_of(failed);
  EXPECT_NE(reason_of(failed).find("No space left on device"), std::string::npos) << reason_of(failed);
  // Its cards are free: only the running job holds one.
  ASSERT_TRUE(eventually([&] { return holders(c, "n1").size() == 1; }, 20s)) << c.get("/v1/nodes/n1").dump();
  EXPECT_EQ(holders(c, "n1").begin()->second, running_id);

  // Degraded, with the reason, and nothing is placed there.
  ASSERT_TRUE(c.wait_node_state("n1", "degraded"));
  EXPECT_EQ(c.get("/v1/nodes/n1").value("degraded", ""), "agent state dir: No space left on device");
  auto waiting = c.submit({{"command", {"true"}}, {"devices", 1}});
  const std::string waiting_id = waiting["id"];
  ASSERT_TRUE(eventually([&] { return !c.get("/v1/jobs/" + waiting_id).value("reason", "").empty(); }, 20s));
  EXPECT_EQ(c.get("/v1/jobs/" + waiting_id).value("state", ""), "pending");

  // The running task ends: its result cannot be written, and is reported so.
  std::ofstream(go).put('\n');
  auto ended = c.wait_job(running_id, {"failed", "succeeded"});
  ASSERT_TRUE(ended);
  EXPECT_EQ((*ended)["state"], "failed");
  EXPECT_EQ(reason_of(ended).rfind("result not recorded: ", 0), 0u) << reason_of(ended);
  EXPECT_NE(reason_of(ended).find("No space left on device"), std::string::npos) << reason_of(ended);
  EXPECT_FALSE(ended->contains("exit_code") && !(*ended)["exit_code"].is_null()) << ended->dump();

  // Space is back: the node recovers and takes the waiting job.
  std::filesystem::remove(c.state_dir("n1") + "/filler");
  ASSERT_TRUE(c.wait_node_state("n1", "ready"));
  EXPECT_FALSE(c.get("/v1/nodes/n1").contains("degraded"));
  auto ran = c.wait_job(waiting_id, {"succeeded", "failed"});
  ASSERT_TRUE(ran);
  EXPECT_EQ((*ran)["state"], "succeeded") << ran->dump();
}

}  // namespace
