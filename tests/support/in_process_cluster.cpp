#include "in_process_cluster.hpp"

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include <gtest/gtest.h>
#include <httplib.h>

#include "tessel/agent/durable_file.hpp"
#include "tessel/agent/launcher.hpp"
#include "tessel/agent/proc_info.hpp"
#include "tessel/agent/notifier.hpp"
#include "tessel/agent/scheduler_client.hpp"
#include "tessel/agent/state_dir.hpp"
#include "tessel/agent/task_events.hpp"
#include "tessel/agent/task_files.hpp"
#include "tessel/agent/task_manager.hpp"

namespace tessel::testkit {

using nlohmann::json;
using namespace std::chrono_literals;

namespace {

api::NodeInventory gaudi_board() {
  api::NodeInventory inv;
  inv.vendor = api::Vendor::habana;
  inv.driver_version = "1.18.0";
  for (int i = 0; i < 8; ++i) {
    api::Device d;
    d.index = i;
    d.module_id = i;
    d.model = "HL-225";
    inv.devices.push_back(d);
  }
  return inv;
}

struct BoardInventory : agent::InventorySource {
  Result<api::NodeInventory> read() override { return gaudi_board(); }
};

struct QuietNotifier : agent::Notifier {
  void ready() override {}
  void watchdog() override {}
  void status(const std::string&) override {}
  std::optional<std::chrono::microseconds> watchdog_period() override { return std::nullopt; }
};

// "Starts" a supervisor: the test process stands for it (alive, and recorded in
// supervisor.json as a real supervisor records itself, so a restarted agent finds
// it), and the test ends the task through InProcessCluster::end_task().
struct FakeLauncher : agent::TaskLauncher {
  Result<int> launch(const std::string& task_dir) override {
    const int self = static_cast<int>(::getpid());
    agent::SupervisorRecord rec{self, agent::process_start_time(self).value_or(0)};
    if (auto st = agent::write_file_durable(task_dir + "/supervisor.json", agent::serialize(rec)); !st)
      return st.error();
    std::lock_guard l(mu);
    launched.push_back(std::filesystem::path(task_dir).filename().string());
    return self;
  }
  Status stop(const agent::SupervisorRecord&) override {
    std::lock_guard l(mu);
    ++stops;
    return ok_status();
  }
  std::mutex mu;
  std::vector<std::string> launched;
  int stops = 0;
};

}  // namespace

struct InProcessCluster::Node {
  // The agent's task times come from the cluster's FakeClock, like the scheduler's.
  Node(const std::string& name, const std::string& root, int port, const Clock& clock)
      : dir(root), hb(loop, url(port), "", false), poll(loop, url(port), ""), report(loop, url(port), "", false) {
    EXPECT_TRUE(dir.init().ok());
    agent::TaskManagerConfig tcfg;
    tcfg.node = name;
    tcfg.clock = &clock;
    tasks = std::make_unique<agent::TaskManager>(dir, launcher, tcfg);
    tasks->load();
    agent::AgentConfig cfg;
    cfg.node = name;
    cfg.address = "127.0.0.1";
    cfg.scheduler_url = url(port);
    cfg.heartbeat_interval = std::chrono::hours(1);
    cfg.backoff_base = 5ms;
    cfg.backoff_cap = 100ms;
    cfg.events_socket = agent::events_socket_path(dir.root());
    cfg.clock = &clock;
    agent = std::make_unique<agent::Agent>(cfg, hb, poll, report, inventory, *tasks, notifier);
    thread = std::thread([this] { agent->run(); });
  }
  ~Node() {
    agent->stop();
    thread.join();
  }
  static std::string url(int port) { return "http://127.0.0.1:" + std::to_string(port); }

  agent::StateDir dir;
  FakeLauncher launcher;
  BoardInventory inventory;
  QuietNotifier notifier;
  http::ClientLoop loop;
  agent::SchedulerClient hb, poll, report;
  std::unique_ptr<agent::TaskManager> tasks;
  std::unique_ptr<agent::Agent> agent;
  std::thread thread;
};

InProcessCluster::InProcessCluster(scheduler::StateOptions opts) {
  auto s = scheduler::open_sqlite_store(":memory:");
  EXPECT_TRUE(s.ok());
  store_ = std::move(*s);
  scheduler::ServiceOptions so;
  so.port = 0;
  so.liveness_tick_ms = 0;
  so.state = opts;
  service_ = std::make_unique<scheduler::Service>(*store_, clock_, std::nullopt, so);
  auto st = service_->start();
  EXPECT_TRUE(st.ok()) << (st.ok() ? "" : st.error().message);
}

InProcessCluster::~InProcessCluster() {
  nodes_.clear();
  service_->stop();
}

void InProcessCluster::start_agent(const std::string& node) {
  nodes_.erase(node);
  nodes_[node] = std::make_unique<Node>(node, root_.str(node), service_->port(), clock_);
  ASSERT_TRUE(eventually([&] { return service_->state().node(node).ok(); })) << node << " never registered";
}

void InProcessCluster::stop_agent(const std::string& node) { nodes_.erase(node); }

namespace {
httplib::Client client(int port) {
  httplib::Client c("127.0.0.1", port);
  c.set_read_timeout(30);
  return c;
}
}  // namespace

json InProcessCluster::submit(const json& spec) {
  auto c = client(service_->port());
  auto r = c.Post("/v1/jobs", spec.dump(), "application/json");
  EXPECT_TRUE(r);
  if (!r) return json();
  EXPECT_EQ(r->status, 201) << r->body;
  return json::parse(r->body, nullptr, false);
}

json InProcessCluster::job(const std::string& id) {
  auto c = client(service_->port());
  auto r = c.Get(("/v1/jobs/" + id).c_str());
  return r ? json::parse(r->body, nullptr, false) : json();
}

void InProcessCluster::cancel(const std::string& id) {
  auto c = client(service_->port());
  auto r = c.Post(("/v1/jobs/" + id + "/cancel").c_str());  // No body: RFC 9112 says empty.
  ASSERT_TRUE(r);
  ASSERT_EQ(r->status, 200) << r->body;
}

bool InProcessCluster::wait_job_state(const std::string& id, const std::string& state) {
  return eventually([&] { return job(id).value("state", "") == state; });
}

void InProcessCluster::heartbeat(const std::string& node) {
  auto c = client(service_->port());
  const json body = {{"node", node}, {"inventory", api::to_json(gaudi_board())}};
  auto r = c.Post("/v1/agent/heartbeat", body.dump(), "application/json");
  ASSERT_TRUE(r);
  ASSERT_EQ(r->status, 200) << r->body;
}

std::vector<std::string> InProcessCluster::launched(const std::string& node) {
  auto& l = nodes_.at(node)->launcher;
  std::lock_guard g(l.mu);
  return l.launched;
}

int InProcessCluster::stops(const std::string& node) {
  auto& l = nodes_.at(node)->launcher;
  std::lock_guard g(l.mu);
  return l.stops;
}

bool InProcessCluster::wait_launched(const std::string& node, const std::string& assignment_id) {
  return eventually([&] {
    auto l = launched(node);
    return std::find(l.begin(), l.end(), assignment_id) != l.end();
  });
}

std::map<std::string, std::string> InProcessCluster::task_env(const std::string& node, const std::string& assignment_id,
                                                              int local_rank) {
  std::ifstream in(nodes_.at(node)->dir.task_dir(assignment_id) + "/launch.json");
  std::stringstream text;
  text << in.rdbuf();
  auto plan = agent::parse_launch_plan(text.str());
  EXPECT_TRUE(plan.ok()) << assignment_id;
  if (!plan.ok() || local_rank >= static_cast<int>(plan->ranks.size())) return {};
  return plan->ranks[static_cast<size_t>(local_rank)].env;
}

void InProcessCluster::end_task(const std::string& node, const std::string& assignment_id, int exit_code, int signal) {
  auto& n = *nodes_.at(node);
  agent::TaskResult r;
  r.state = api::TaskState::exited;
  if (signal >= 0)
    r.signal = signal;
  else
    r.exit_code = exit_code;
  ASSERT_TRUE(n.dir.write_result(assignment_id, r).ok());
  agent::TaskEventSender(agent::events_socket_path(n.dir.root())).send(assignment_id);
}

}  // namespace tessel::testkit
