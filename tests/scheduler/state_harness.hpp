#pragma once
// ClusterState without HTTP or a scheduler thread, for tests: SQLite (in memory, or a
// file to restart from) behind a FaultyStore, a FakeClock that stands still until the
// test moves it. The test runs each scheduling pass itself and reports tasks as an
// agent would. Test files derive from StateHarness to add what only they need.

#include <gtest/gtest.h>

#include <memory>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "tessel/scheduler/state.hpp"
#include "tessel/scheduler/store.hpp"

namespace tessel::scheduler::testing {

// `n` Gaudi 2 cards (HL-225), module ids equal to indices, driver 1.18.0.
inline api::NodeInventory gaudi_cards(int n = 8) {
  api::NodeInventory inv;
  inv.driver_version = "1.18.0";
  for (int i = 0; i < n; ++i) {
    api::Device d;
    d.index = d.module_id = i;
    d.model = "HL-225";
    inv.devices.push_back(d);
  }
  return inv;
}

struct StateHarness {
  explicit StateHarness(const std::string& db = ":memory:", StateOptions so = {}) {
    auto s = open_sqlite_store(db);
    EXPECT_TRUE(s.ok()) << s.error().message;
    store = std::make_unique<FaultyStore>(std::move(*s));
    state = std::make_unique<ClusterState>(*store, clock, so);
    auto r = state->restore();
    EXPECT_TRUE(r.ok()) << r.error().message;
  }

  // Registers `name` with eight Gaudi 2 cards.
  void add_node(const std::string& name) {
    api::RegisterRequest r;
    r.node = name;
    r.address = "10.0.0.1";
    r.inventory = gaudi_cards();
    ASSERT_TRUE(state->register_node(r, "").ok());
  }
  Result<api::Job> try_submit(const nlohmann::json& spec, const std::string& user = "alice") {
    auto parsed = api::parse_job_spec(spec);
    EXPECT_TRUE(parsed) << spec.dump();
    return state->submit(*parsed, user);
  }
  // The new job's id ("" and a test failure when it is refused).
  std::string submit(const nlohmann::json& spec, const std::string& user = "alice") {
    auto j = try_submit(spec, user);
    EXPECT_TRUE(j.ok()) << j.error().message;
    return j.ok() ? j->id : "";
  }
  api::Job job(const std::string& id) const { return state->job(id).value(); }
  // The agents' report of every rank of `id`'s current attempt: running, or exited
  // with `code`. The last refusal, if any.
  Status report(const std::string& id, std::optional<int> code) {
    const api::Job j = job(id);
    Status last = ok_status();
    for (const auto& a : j.allocations) {
      api::TaskReport t;
      t.assignment_id = api::assignment_id(j.id, j.attempt, a.rank);
      t.state = code ? api::TaskState::exited : api::TaskState::running;
      t.exit_code = code;
      auto r = state->report(api::ReportRequest{a.node, {t}}, "");
      if (!r) last = r.error();
    }
    return last;
  }
  // Runs `id`, already placed by a pass, and ends it with `code`.
  void run_to_end(const std::string& id, int code) {
    ASSERT_EQ(job(id).state, api::JobState::assigned) << id;
    ASSERT_TRUE(report(id, std::nullopt).ok());
    ASSERT_TRUE(report(id, code).ok());
  }

  FakeClock clock;
  std::unique_ptr<FaultyStore> store;
  std::unique_ptr<ClusterState> state;
};

}  // namespace tessel::scheduler::testing
