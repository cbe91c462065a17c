// What each task sees: the real scheduler + agents, fake hl-smi whose index order
// differs from module order (gaudi2-hl225-8: indices 0..7 carry modules 1,3,2,6,0,7,5,4).
#include <gtest/gtest.h>

#include <httplib.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <filesystem>
#include <future>
#include <set>

#include "cluster.hpp"

using namespace tessel::itest;
using nlohmann::json;
using namespace std::chrono_literals;

namespace {

const std::map<int, int> kModuleToIndex = {{0, 4}, {1, 0}, {2, 2}, {3, 1}, {4, 7}, {5, 6}, {6, 3}, {7, 5}};

std::string join(const std::vector<int>& v) {
  std::string s;
  for (size_t i = 0; i < v.size(); ++i) s += (i ? "," : "") + std::to_string(v[i]);
  return s;
}

json env_job(int devices, int nodes = 1, bool per_device = false) {
  json spec = {{"command", {"/usr/bin/env"}}, {"devices", devices}, {"nodes", nodes}};
  if (per_device) spec["tasks_per_node"] = "device";
  return spec;
}

class ClusterEnv : public ::testing::Test {
 protected:
  void SetUp() override {
    c.start_scheduler();
    c.start_agent("n1");
  }
  Cluster c;
};

TEST_F(ClusterEnv, GroupSizesGetModulesAndMatchingIndices) {
  for (int devices : {1, 2, 4, 8}) {
    SCOPED_TRACE("devices=" + std::to_string(devices));
    auto run = c.run_and_read_env("n1", env_job(devices));
    ASSERT_TRUE(run);
    const json& done = run->job;
    std::vector<int> mods = done["allocations"][0]["module_ids"], idx = run->indices;
    ASSERT_EQ(static_cast<int>(mods.size()), devices);
    ASSERT_TRUE(std::is_sorted(mods.begin(), mods.end()));
    for (size_t i = 0; i < mods.size(); ++i) EXPECT_EQ(idx[i], kModuleToIndex.at(mods[i]));
    auto& env = run->env;
    EXPECT_EQ(env["HABANA_VISIBLE_MODULES"], join(mods));
    EXPECT_EQ(env["HABANA_VISIBLE_DEVICES"], join(idx));
    EXPECT_EQ(env["PT_ENABLE_INT64_SUPPORT"], "1");
    EXPECT_EQ(env["TESSEL_DEVICE_TYPE"], "hpu");
    EXPECT_EQ(env["TESSEL_DIST_BACKEND"], "hccl");
    EXPECT_EQ(env["RANK"], "0");
    EXPECT_EQ(env["WORLD_SIZE"], "1");
    EXPECT_EQ(env["LOCAL_RANK"], "0");
    EXPECT_EQ(env["LOCAL_WORLD_SIZE"], "1");
    EXPECT_EQ(env["NODE_RANK"], "0");
    EXPECT_EQ(env["TESSEL_JOB_ID"], done["id"]);
    EXPECT_EQ(env["TESSEL_NODE"], "n1");
    EXPECT_EQ(env["MASTER_ADDR"], done["master_addr"]);
    EXPECT_EQ(env["MASTER_PORT"], std::to_string(done["master_port"].get<int>()));
    EXPECT_FALSE(env["TESSEL_PORT"].empty());
    EXPECT_EQ(env.count("HLS_MODULE_ID"), 0u);
  }
}

TEST_F(ClusterEnv, TaskPerDevice) {
  auto job = c.submit(env_job(4, 1, true));
  auto done = c.wait_job(job["id"], {"succeeded", "failed"});
  ASSERT_TRUE(done);
  ASSERT_EQ((*done)["state"], "succeeded") << done->dump();
  std::vector<int> mods = (*done)["allocations"][0]["module_ids"];
  for (int i = 0; i < 4; ++i) {
    auto env = parse_env_dump(c.log("n1", job["id"], 0, i));
    EXPECT_EQ(env["LOCAL_RANK"], std::to_string(i));
    EXPECT_EQ(env["LOCAL_WORLD_SIZE"], "4");
    EXPECT_EQ(env["RANK"], std::to_string(i));
    EXPECT_EQ(env["WORLD_SIZE"], "4");
    EXPECT_EQ(env["HLS_MODULE_ID"], std::to_string(mods[static_cast<size_t>(i)]));
    EXPECT_EQ(env["HABANA_VISIBLE_MODULES"], join(mods));
  }
}

TEST_F(ClusterEnv, TwoNodeGang) {
  c.start_agent("n2", "gaudi2-hl225-8.csv");
  ASSERT_TRUE(c.wait_node_state("n2", "ready"));
  auto job = c.submit(env_job(8, 2));
  auto done = c.wait_job(job["id"], {"succeeded", "failed"});
  ASSERT_TRUE(done);
  ASSERT_EQ((*done)["state"], "succeeded") << done->dump();
  std::set<std::string> ranks;
  std::string master;
  for (const auto& a : (*done)["allocations"]) {
    auto env = parse_env_dump(c.log(a["node"], job["id"], a["rank"]));
    ranks.insert(env["RANK"]);
    EXPECT_EQ(env["NODE_RANK"], std::to_string(a["rank"].get<int>()));
    EXPECT_EQ(env["WORLD_SIZE"], "2");
    EXPECT_EQ(env["HABANA_VISIBLE_MODULES"], "0,1,2,3,4,5,6,7");
    EXPECT_EQ(env["HABANA_VISIBLE_DEVICES"], "4,0,2,1,7,6,3,5");
    if (master.empty()) master = env["MASTER_ADDR"] + ":" + env["MASTER_PORT"];
    EXPECT_EQ(env["MASTER_ADDR"] + ":" + env["MASTER_PORT"], master);
  }
  EXPECT_EQ(ranks, (std::set<std::string>{"0", "1"}));
}

TEST_F(ClusterEnv, LogsThroughTheScheduler) {
  auto job = c.submit({{"command", {"sh", "-c", "echo hello-logs"}}, {"devices", 1}});
  ASSERT_TRUE(c.wait_job(job["id"], {"succeeded"}));
  httplib::Client h("127.0.0.1", c.port());
  auto r = h.Get(("/v1/jobs/" + job["id"].get<std::string>() + "/logs").c_str());
  ASSERT_TRUE(r);
  EXPECT_NE(r->body.find("hello-logs"), std::string::npos) << r->status << " " << r->body;
}

// Followers stream a running task's log through the scheduler and the agent (both on
// tessel::http) and see the end of the stream when the task ends; several at once.
TEST_F(ClusterEnv, ManyFollowersStreamALogToItsEnd) {
  auto job =
      c.submit({{"command", {"sh", "-c", "for i in 1 2 3 4 5; do echo line-$i; sleep 0.2; done"}}, {"devices", 1}});
  ASSERT_TRUE(c.wait_job(job["id"], {"running", "succeeded"}));
  const std::string path = "/v1/jobs/" + job["id"].get<std::string>() + "/logs?follow=true";
  std::vector<std::future<std::string>> followers;
  for (int i = 0; i < 3; ++i)
    followers.push_back(std::async(std::launch::async, [&, path] {
      httplib::Client h("127.0.0.1", c.port());
      h.set_read_timeout(60);
      std::string got;
      auto r = h.Get(path.c_str(), [&](const char* d, size_t n) {
        got.append(d, n);
        return true;
      });
      return r && r->status == 200 ? got : "HTTP error";
    }));
  for (auto& f : followers) {
    ASSERT_EQ(f.wait_for(std::chrono::seconds(60)), std::future_status::ready);
    const std::string got = f.get();
    for (int i = 1; i <= 5; ++i) EXPECT_NE(got.find("line-" + std::to_string(i)), std::string::npos) << got;
  }
  // A read from an offset starts there.
  httplib::Client h("127.0.0.1", c.port());
  auto r = h.Get(("/v1/jobs/" + job["id"].get<std::string>() + "/logs?offset=7").c_str());
  ASSERT_TRUE(r);
  EXPECT_EQ(r->body.rfind("line-2", 0), 0u) << r->body;
}

// Descriptors `pid` has open now.
int open_fds(pid_t pid) {
  int n = 0;
  std::error_code ec;
  for (auto it = std::filesystem::directory_iterator("/proc/" + std::to_string(pid) + "/fd", ec);
       !ec && it != std::filesystem::directory_iterator(); it.increment(ec))
    ++n;
  return n;
}

// A follower on a raw loopback socket: sends the request, reads the answer's head (and
// what follows it for a moment), and leaves when destroyed, without reading to the end.
class RawFollower {
 public:
  RawFollower(int port, const std::string& path) {
    fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_port = htons(static_cast<uint16_t>(port));
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (::connect(fd_, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) return;
    const std::string req = "GET " + path + " HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n";
    if (::send(fd_, req.data(), req.size(), MSG_NOSIGNAL) != static_cast<ssize_t>(req.size())) return;
    const auto deadline = std::chrono::steady_clock::now() + 10s;
    while (head_.find("\r\n\r\n") == std::string::npos && std::chrono::steady_clock::now() < deadline) {
      pollfd p{fd_, POLLIN, 0};
      if (::poll(&p, 1, 100) <= 0) continue;
      char buf[4096];
      const ssize_t n = ::recv(fd_, buf, sizeof buf, 0);
      if (n <= 0) break;
      head_.append(buf, static_cast<size_t>(n));
    }
  }
  ~RawFollower() { ::close(fd_); }
  RawFollower(const RawFollower&) = delete;
  RawFollower& operator=(const RawFollower&) = delete;
  // "HTTP/1.1 200 OK..." as far as it came.
  const std::string& head() const { return head_; }

 private:
  int fd_ = -1;
  std::string head_;
};

// Followers of a silent task that leave are torn down at once on the scheduler and
// on the agent (their descriptors come back within seconds, not when the task ends),
// and one user holds at most --max-follow-streams-per-user of them (429 past it).
TEST(ClusterStreams, FollowersThatLeaveAreTornDownAndCappedPerUser) {
  Cluster c;
  c.scheduler_args = {"--max-follow-streams-per-user", "8"};
  c.start_scheduler();
  c.start_agent("n1");
  auto job = c.submit({{"command", {"sleep", "120"}}, {"devices", 1}});
  ASSERT_TRUE(c.wait_job(job["id"], {"running"}));
  const std::string path = "/v1/jobs/" + job["id"].get<std::string>() + "/logs?follow=true";
  const pid_t agent = c.agent("n1").pid();
  const int sched_base = open_fds(c.scheduler_pid()), agent_base = open_fds(agent);
  for (int round = 0; round < 3; ++round) {
    SCOPED_TRACE("round " + std::to_string(round));
    {
      std::vector<std::unique_ptr<RawFollower>> followers;
      for (int i = 0; i < 8; ++i) {
        followers.push_back(std::make_unique<RawFollower>(c.port(), path));
        ASSERT_EQ(followers.back()->head().rfind("HTTP/1.1 200", 0), 0u) << followers.back()->head();
      }
      // Each holds a connection on both sides now.
      EXPECT_GE(open_fds(c.scheduler_pid()), sched_base + 8);
      RawFollower ninth(c.port(), path);
      EXPECT_EQ(ninth.head().rfind("HTTP/1.1 429", 0), 0u) << ninth.head();
      EXPECT_NE(ninth.head().find("resource_exhausted"), std::string::npos) << ninth.head();
    }  // All leave, the task still runs and prints nothing.
    EXPECT_TRUE(eventually([&] { return open_fds(c.scheduler_pid()) <= sched_base + 1; }, 10s))
        << open_fds(c.scheduler_pid()) << " descriptors, " << sched_base << " before";
    EXPECT_TRUE(eventually([&] { return open_fds(agent) <= agent_base + 1; }, 10s))
        << open_fds(agent) << " descriptors, " << agent_base << " before";
  }
  EXPECT_EQ(c.post("/v1/jobs/" + job["id"].get<std::string>() + "/cancel", json::object()), 200);
}

}  // namespace
