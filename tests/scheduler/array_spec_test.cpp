// Arrays share their spec: an element keeps and stores only what differs from its
// parent (index, state, attempts, allocation); the command, env and workdir are held
// and stored once, with the parent. Every reader (the API, the agent's assignment,
// a restart, pruning) sees each element's whole spec.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "state_harness.hpp"
#include "temp_dir.hpp"
#include "tessel/api/agent_protocol.hpp"
#include "tessel/scheduler/state.hpp"

namespace tessel::scheduler::testing {
namespace {

using nlohmann::json;

// A spec of about `kib` KiB of env (values of 4 KiB each), `count` elements.
json big_array(int kib, int count) {
  json env = json::object();
  for (int i = 0; i < kib / 4; ++i) env["V" + std::to_string(i)] = std::string(4096, static_cast<char>('a' + i % 26));
  return {{"command", {"train", "--data", "/data/x"}},
          {"env", env},
          {"workdir", "/home/alice/run"},
          {"devices", 1},
          {"array", {{"count", count}}}};
}

int64_t rss_kib() {
  std::ifstream in("/proc/self/status");
  std::string line;
  while (std::getline(in, line))
    if (line.rfind("VmRSS:", 0) == 0) return std::stoll(line.substr(6));
  return 0;
}

int64_t db_bytes(const std::string& db) {
  int64_t n = 0;
  for (const char* suffix : {"", "-wal"}) {
    std::error_code ec;
    const auto size = std::filesystem::file_size(db + suffix, ec);
    if (!ec) n += static_cast<int64_t>(size);
  }
  return n;
}

TEST(ArraySpec, ElementsAreStoredWithoutTheSharedFieldsAndReadBackWhole) {
  api::Job element;
  element.id = "j-00000001_3";
  element.user = "alice";
  auto spec = api::parse_job_spec(big_array(8, 2));
  ASSERT_TRUE(spec);
  element.spec = *spec;
  api::share_parent_spec(element);
  const json wire = api::to_json(element);
  EXPECT_EQ(wire["spec_from_parent"], true);
  EXPECT_FALSE(wire["spec"].contains("command"));
  EXPECT_FALSE(wire["spec"].contains("env"));
  EXPECT_FALSE(wire["spec"].contains("workdir"));
  EXPECT_LT(wire.dump().size(), 1024U);
  auto back = api::job_from_json(wire);
  ASSERT_TRUE(back.ok()) << back.error().message;
  EXPECT_TRUE(back->spec_shared);
  EXPECT_TRUE(back->spec.command.empty());
  EXPECT_EQ(back->spec.devices, 1);
  api::take_parent_spec(*back, *spec);
  EXPECT_FALSE(back->spec_shared);
  EXPECT_EQ(back->spec, *spec);
}

// The review's case: 1,000 elements of a 0.5 MB spec. Before, 501 MB of memory and
// 951 MB of database; now about one spec of each (bounded here generously).
TEST(ArraySpec, AThousandElementsOfAHalfMegabyteSpecCostAboutOneSpec) {
  const testkit::TempDir dir("tessel-array-spec");
  const std::string db = dir.str("s.db");
  StateHarness h(db);
  const int64_t rss_before = rss_kib();
  const int64_t db_before = db_bytes(db);
  const std::string parent = h.submit(big_array(240, 1000));
  ASSERT_FALSE(parent.empty());
  const int64_t rss_grew_mib = (rss_kib() - rss_before) / 1024;
  const int64_t db_grew_mib = (db_bytes(db) - db_before) >> 20;
  EXPECT_LT(rss_grew_mib, 64) << "scheduler memory grew " << rss_grew_mib << " MiB";
  EXPECT_LT(db_grew_mib, 16) << "database grew " << db_grew_mib << " MiB";

  // Each element, as the API shows it, has the whole spec.
  const api::Job e = h.job(parent + "_999");
  EXPECT_FALSE(e.spec_shared);
  EXPECT_EQ(e.spec.command, (std::vector<std::string>{"train", "--data", "/data/x"}));
  EXPECT_EQ(e.spec.env.size(), 60U);
  EXPECT_EQ(e.spec.workdir, "/home/alice/run");
  for (const auto& listed : h.state->list_jobs({}).jobs) EXPECT_EQ(listed.spec.env.size(), 60U) << listed.id;
}

TEST(ArraySpec, TheAgentGetsTheWholeSpecAndARestartKeepsItShared) {
  const testkit::TempDir dir("tessel-array-spec");
  const std::string db = dir.str("s.db");
  std::string parent;
  {
    StateHarness h(db);
    h.add_node("n1");
    parent = h.submit(big_array(8, 3));
    h.state->schedule_pass();
    std::vector<api::Assignment> got;
    auto w = h.state->watch_desired("n1", -1, [&](const Result<api::DesiredState>& d) { got = d->assignments; });
    ASSERT_TRUE(w.ok());
    ASSERT_EQ(got.size(), 3U);
    for (const auto& a : got) {
      EXPECT_EQ(a.spec.command, (std::vector<std::string>{"train", "--data", "/data/x"})) << a.id;
      EXPECT_EQ(a.spec.env.size(), 2U) << a.id;
      EXPECT_EQ(a.spec.workdir, "/home/alice/run") << a.id;
    }
    h.run_to_end(parent + "_0", 0);
  }
  StateHarness again(db);
  EXPECT_EQ(again.job(parent + "_0").state, api::JobState::succeeded);
  EXPECT_EQ(again.job(parent + "_1").spec.env.size(), 2U);
  EXPECT_EQ(again.job(parent + "_1").spec.workdir, "/home/alice/run");
}

// An element kept past --history-days (a job not yet ended depends on it) keeps its
// parent, which holds the spec they share.
TEST(ArraySpec, PruningKeepsTheParentWhileAnElementRemains) {
  StateOptions so;
  so.history_days = 1;
  StateHarness h(":memory:", so);
  const std::string parent = h.submit({{"command", {"x"}}, {"env", {{"K", "value"}}}, {"array", {{"count", 2}}}});
  ASSERT_TRUE(h.state->cancel(parent, Principal{"alice", Role::user, "", {}}).ok());
  const std::string waiting = h.submit({{"command", {"y"}}, {"after_any", {parent + "_1"}}, {"devices", 1}});
  EXPECT_EQ(h.job(waiting).state, api::JobState::pending);
  h.clock.advance_ms(int64_t{49} * 3600 * 1000);
  auto pruned = h.state->prune_history(100);
  ASSERT_TRUE(pruned.ok());
  EXPECT_EQ(*pruned, 1U);  // Element 0 only.
  EXPECT_FALSE(h.state->job(parent + "_0").has_value());
  ASSERT_TRUE(h.state->job(parent).has_value());
  EXPECT_EQ(h.job(parent + "_1").spec.env.at("K"), "value");
}

}  // namespace
}  // namespace tessel::scheduler::testing
