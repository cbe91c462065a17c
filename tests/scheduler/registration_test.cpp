// A new node's registration commits without holding the state lock (commit_queued):
// while its record waits for the store, the rest of the scheduler answers, the node is
// not visible yet, a second registration of the same name is refused with 503, and a
// failed write leaves nothing behind.
#include <condition_variable>
#include <deque>
#include <future>
#include <memory>
#include <mutex>
#include <thread>

#include <gtest/gtest.h>

#include "eventually.hpp"
#include "state_harness.hpp"

namespace tessel::scheduler::testing {
namespace {

using testkit::eventually;

// A store whose writes wait at a gate the test opens; they commit in the order they
// were queued, on one worker thread, as the real stores' group commit does.
class GateStore final : public Store {
 public:
  explicit GateStore(std::unique_ptr<Store> inner) : inner_(std::move(inner)) {
    worker_ = std::thread([this] { loop(); });
  }
  ~GateStore() override {
    {
      std::lock_guard lk(mu_);
      stop_ = open_ = true;
    }
    cv_.notify_all();
    worker_.join();
  }
  Status write(const WriteBatch& batch) override {
    return write_queued(std::make_shared<const WriteBatch>(batch)).get();
  }
  std::future<Status> write_queued(std::shared_ptr<const WriteBatch> batch) override {
    std::lock_guard lk(mu_);
    queue_.push_back(Item{std::move(batch), {}});
    auto fut = queue_.back().done.get_future();
    cv_.notify_all();
    return fut;
  }
  Result<Snapshot> load() override { return inner_->load(); }

  void set_open(bool open, bool failing = false) {
    {
      std::lock_guard lk(mu_);
      open_ = open;
      failing_ = failing;
    }
    cv_.notify_all();
  }
  size_t waiting() {
    std::lock_guard lk(mu_);
    return queue_.size();
  }

 private:
  struct Item {
    std::shared_ptr<const WriteBatch> batch;
    std::promise<Status> done;
  };
  void loop() {
    std::unique_lock lk(mu_);
    for (;;) {
      cv_.wait(lk, [&] { return stop_ || (open_ && !queue_.empty()); });
      if (queue_.empty()) return;
      Item item = std::move(queue_.front());
      queue_.pop_front();
      const bool failing = failing_;
      lk.unlock();
      item.done.set_value(failing ? Status(Error{"injected write failure"}) : inner_->write(*item.batch));
      lk.lock();
    }
  }

  std::unique_ptr<Store> inner_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<Item> queue_;
  bool open_ = true, failing_ = false, stop_ = false;
  std::thread worker_;
};

struct Registration : ::testing::Test {
  Registration() {
    auto s = open_sqlite_store(":memory:");
    EXPECT_TRUE(s.ok());
    store = std::make_unique<GateStore>(std::move(*s));
    state = std::make_unique<ClusterState>(*store, clock, StateOptions{});
    EXPECT_TRUE(state->restore().ok());
  }
  static api::RegisterRequest request(const std::string& node) {
    api::RegisterRequest r;
    r.node = node;
    r.address = "10.0.0.1";
    r.inventory = gaudi_cards();
    return r;
  }
  // Starts a registration of `node` while the gate is closed; returns once its write waits there.
  std::future<Result<api::RegisterResponse>> start_register(const std::string& node) {
    const size_t before = store->waiting();
    auto fut = std::async(std::launch::async, [this, node] { return state->register_node(request(node), ""); });
    EXPECT_TRUE(eventually([&] { return store->waiting() > before; })) << node;
    return fut;
  }
  bool listed(const std::string& node) {
    for (const auto& n : state->nodes())
      if (n.rec.name == node) return true;
    return false;
  }

  FakeClock clock;
  std::unique_ptr<GateStore> store;
  std::unique_ptr<ClusterState> state;
};

TEST_F(Registration, WhileANewNodesRecordWaitsForTheStoreTheSchedulerKeepsAnswering) {
  store->set_open(false);
  auto first = start_register("n1");
  // Not visible yet, and nothing waits for the lock the registration would have held.
  EXPECT_FALSE(listed("n1"));
  auto hb = state->heartbeat(api::HeartbeatRequest{"n1", gaudi_cards()}, "");
  ASSERT_FALSE(hb.ok());
  EXPECT_EQ(hb.error().code, ErrorCode::not_found);
  auto again = state->register_node(request("n1"), "");
  ASSERT_FALSE(again.ok());
  EXPECT_EQ(again.error().code, ErrorCode::unavailable);
  EXPECT_NE(again.error().message.find("another registration"), std::string::npos) << again.error().message;
  // Other nodes' registrations queue behind it and share the store's next commit.
  auto second = start_register("n2");
  store->set_open(true);
  ASSERT_TRUE(first.get().ok());
  ASSERT_TRUE(second.get().ok());
  EXPECT_TRUE(listed("n1"));
  EXPECT_TRUE(listed("n2"));
  EXPECT_TRUE(state->heartbeat(api::HeartbeatRequest{"n1", gaudi_cards()}, "").ok());
}

TEST_F(Registration, AFailedWriteLeavesNoNodeAndARetrySucceeds) {
  store->set_open(false);
  auto first = start_register("n1");
  store->set_open(true, /*failing=*/true);
  auto r = first.get();
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code, ErrorCode::unavailable);
  EXPECT_FALSE(listed("n1"));
  EXPECT_FALSE(state->storage_ok());
  store->set_open(true);
  ASSERT_TRUE(state->register_node(request("n1"), "").ok());
  EXPECT_TRUE(listed("n1"));
  EXPECT_TRUE(state->storage_ok());
  // And it survives a restart: the record was written.
  auto snap = store->load();
  ASSERT_TRUE(snap.ok());
  ASSERT_EQ(snap->nodes.size(), 1u);
  EXPECT_EQ(snap->nodes[0].name, "n1");
}

// A heartbeat with new telemetry only (the usual one) changes nothing stored: it is
// answered without a write, even while the store holds every write at its gate; one
// that changes what placement sees (a card's health) is written.
TEST_F(Registration, TelemetryOnlyHeartbeatsWriteNothingAndShapeChangesAreStored) {
  ASSERT_TRUE(state->register_node(request("n1"), "").ok());
  auto utilization_of_card_0 = [&] {
    for (const auto& n : state->nodes())
      if (n.rec.name == "n1") return n.rec.inventory.devices.at(0).utilization_pct;
    return std::optional<int64_t>();
  };
  store->set_open(false);
  api::HeartbeatRequest hb{"n1", gaudi_cards()};
  hb.inventory.devices[0].utilization_pct = 87;
  hb.inventory.devices[0].temperature_c = 61;
  auto answered = std::async(std::launch::async, [&] { return state->heartbeat(hb, ""); });
  if (answered.wait_for(std::chrono::seconds(30)) != std::future_status::ready) {
    store->set_open(true);  // Lets it finish, so the test fails instead of hanging.
    FAIL() << "the heartbeat waited for the store";
  }
  ASSERT_TRUE(answered.get().ok());
  EXPECT_EQ(store->waiting(), 0u);
  EXPECT_EQ(utilization_of_card_0(), 87);

  hb.inventory.devices[3].healthy = false;
  hb.inventory.devices[3].health_reason = "uncorrectable ECC error";
  const size_t before = store->waiting();
  auto changed = std::async(std::launch::async, [&] { return state->heartbeat(hb, ""); });
  EXPECT_TRUE(eventually([&] { return store->waiting() > before; })) << "the health change was not written";
  store->set_open(true);
  ASSERT_TRUE(changed.get().ok());
  auto snap = store->load();
  ASSERT_TRUE(snap.ok());
  ASSERT_EQ(snap->nodes.size(), 1u);
  EXPECT_FALSE(snap->nodes[0].inventory.devices.at(3).healthy);
}

TEST_F(Registration, AHeartbeatInPlaceTakesTelemetryAndLeavesTheRestToTheCommittingPath) {
  ASSERT_TRUE(state->register_node(request("n1"), "").ok());
  ASSERT_TRUE(state->register_node(request("n2"), "").ok());
  store->set_open(false);  // In place never writes: a write would hang here, not pass.
  api::HeartbeatRequest hb{"n1", gaudi_cards()};
  hb.inventory.devices[0].utilization_pct = 42;
  ASSERT_TRUE(state->heartbeat_in_place(hb, "").has_value());
  EXPECT_EQ(store->waiting(), 0u);
  bool seen = false;
  for (const auto& n : state->nodes())
    if (n.rec.name == "n1") seen = n.rec.inventory.devices.at(0).utilization_pct == 42;
  EXPECT_TRUE(seen) << "the telemetry was not taken";

  // Not for it (the caller then calls heartbeat()), and the request is left whole:
  // an unknown node, a changed card, a task list.
  api::HeartbeatRequest unknown{"n9", gaudi_cards()};
  EXPECT_FALSE(state->heartbeat_in_place(unknown, "").has_value());
  api::HeartbeatRequest sick{"n1", gaudi_cards()};
  sick.inventory.devices[5].healthy = false;
  sick.inventory.devices[5].health_reason = "uncorrectable ECC error";
  EXPECT_FALSE(state->heartbeat_in_place(sick, "").has_value());
  ASSERT_EQ(sick.inventory.devices.size(), gaudi_cards().devices.size());
  EXPECT_EQ(sick.inventory.devices[5].health_reason, "uncorrectable ECC error");
  api::HeartbeatRequest with_tasks{"n1", gaudi_cards()};
  with_tasks.tasks.emplace();
  EXPECT_FALSE(state->heartbeat_in_place(with_tasks, "").has_value());

  // The state lock busy (a known node's re-registration holds it through its commit):
  // it never waits.
  auto rereg = std::async(std::launch::async, [this] { return state->register_node(request("n2"), ""); });
  ASSERT_TRUE(eventually([&] { return store->waiting() == 1; }));
  api::HeartbeatRequest again{"n1", gaudi_cards()};
  EXPECT_FALSE(state->heartbeat_in_place(again, "").has_value());
  store->set_open(true);
  ASSERT_TRUE(rereg.get().ok());
  EXPECT_TRUE(state->heartbeat_in_place(again, "").has_value());
}

// Heartbeats with readings name the inventory the scheduler holds by its tag: taken in
// place while it is that one; 409 naming inventory_tag once it took another (a whole
// inventory, a restart), so the agent sends it whole.
TEST_F(Registration, ReadingsApplyToTheInventoryOfTheirTagOnly) {
  auto reg = state->register_node(request("n1"), "");
  ASSERT_TRUE(reg.ok());
  const int64_t tag = reg->inventory_tag;
  ASSERT_GT(tag, 0);
  auto with_readings = [](int64_t t, int cards, int64_t utilization) {
    api::HeartbeatRequest hb;
    hb.node = "n1";
    auto readings = api::readings_of(gaudi_cards(cards));
    for (auto& r : readings) r.utilization_pct = utilization;
    hb.readings = api::HeartbeatReadings{t, readings};
    return hb;
  };
  // Not taken in place, and heartbeat() refuses it: its error.
  auto refused_error = [&](api::HeartbeatRequest hb) {
    EXPECT_FALSE(state->heartbeat_in_place(hb, "").has_value());
    auto answer = state->heartbeat(hb, "");
    EXPECT_FALSE(answer.ok());
    return answer.ok() ? Error{} : answer.error();
  };
  auto utilization = [&](size_t card) {
    auto n = state->node("n1");
    return n.ok() ? n->rec.inventory.devices.at(card).utilization_pct : std::nullopt;
  };

  store->set_open(false);  // Readings never write.
  auto hb = with_readings(tag, 8, 55);
  auto in_place = state->heartbeat_in_place(hb, "");
  ASSERT_TRUE(in_place.has_value());
  EXPECT_EQ(in_place->inventory_tag, tag);
  EXPECT_EQ(utilization(7), 55);
  auto committed_path = state->heartbeat(with_readings(tag, 8, 56), "");
  ASSERT_TRUE(committed_path.ok()) << committed_path.error().message;
  EXPECT_EQ(committed_path->inventory_tag, tag);
  EXPECT_EQ(utilization(7), 56);
  EXPECT_EQ(store->waiting(), 0u);
  EXPECT_EQ(state->node("n1")->rec.inventory.devices.at(7).serial, gaudi_cards().devices.at(7).serial);

  // Readings of another number of cards: 400 naming readings, nothing taken.
  const Error fewer = refused_error(with_readings(tag, 7, 99));
  EXPECT_EQ(fewer.code, ErrorCode::invalid_argument);
  EXPECT_EQ(fewer.field, "readings");
  EXPECT_EQ(utilization(0), 56);

  // A whole inventory gets a new tag; the old one is refused.
  auto whole = state->heartbeat(api::HeartbeatRequest{"n1", gaudi_cards()}, "");
  ASSERT_TRUE(whole.ok());
  EXPECT_NE(whole->inventory_tag, tag);
  const Error stale = refused_error(with_readings(tag, 8, 1));
  EXPECT_EQ(stale.code, ErrorCode::conflict);
  EXPECT_EQ(stale.field, "inventory_tag");
  store->set_open(true);

  // A node marked down comes back up with readings of the tag it holds.
  clock.advance_ms(StateOptions{}.heartbeat_timeout_ms + 1);
  state->check_liveness();
  ASSERT_EQ(state->node("n1")->state, "down");
  auto back = state->heartbeat(with_readings(whole->inventory_tag, 8, 3), "");
  ASSERT_TRUE(back.ok()) << back.error().message;
  EXPECT_EQ(state->node("n1")->state, "ready");
  EXPECT_EQ(utilization(2), 3);

  // Tags are not stored: a restarted scheduler knows none of them.
  ClusterState restarted(*store, clock, StateOptions{});
  ASSERT_TRUE(restarted.restore().ok());
  auto after_restart = restarted.heartbeat(with_readings(whole->inventory_tag, 8, 4), "");
  ASSERT_FALSE(after_restart.ok());
  EXPECT_EQ(after_restart.error().code, ErrorCode::conflict);
}

TEST_F(Registration, AKnownNodesReregistrationCommitsInOrder) {
  ASSERT_TRUE(state->register_node(request("n1"), "").ok());
  // A known node re-registers on the path that holds the lock through its commit (its
  // reports and fences must be judged with the write): it finishes once the store does.
  store->set_open(false);
  auto rereg = std::async(std::launch::async, [this] { return state->register_node(request("n1"), ""); });
  EXPECT_TRUE(eventually([&] { return store->waiting() == 1; }));
  store->set_open(true);
  ASSERT_TRUE(rereg.get().ok());
  EXPECT_TRUE(listed("n1"));
}

TEST_F(Registration, ManyConcurrentNewNodesAllArrive) {
  std::vector<std::future<Result<api::RegisterResponse>>> all;
  for (int i = 0; i < 64; ++i)
    all.push_back(std::async(std::launch::async,
                             [this, i] { return state->register_node(request("n" + std::to_string(i)), ""); }));
  for (auto& f : all) EXPECT_TRUE(f.get().ok());
  EXPECT_EQ(state->nodes().size(), 64u);
  auto snap = store->load();
  ASSERT_TRUE(snap.ok());
  EXPECT_EQ(snap->nodes.size(), 64u);
}

}  // namespace
}  // namespace tessel::scheduler::testing
