// Property tests: thousands of random operations against ModuleGroupAllocator with
// a seeded std::mt19937, checking the allocator's invariants after every one:
//  - no card is in two live allocations (and the allocator agrees with our record);
//  - every placement is one valid group on one schedulable node of the asked
//    vendor/model, on cards that were present and healthy at placement time;
//  - gangs are placed all at once on distinct nodes with ranks 0..n-1;
//  - node constraints hold: every placed node has the selector's labels and is not
//    excluded, and the nodelist's nodes are part of the job (all of it when as long);
//    a gang with a required topology sits in one rack (odd seeds also set the
//    scheduler's topology key, so plain gangs prefer one rack);
//  - backfill never delays the reserved head job: jobs using reserved cards end by
//    the reservation start, and the head's start does not move later after backfill.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <map>
#include <memory>
#include <random>
#include <set>
#include <tuple>

#include "tessel/api/topology.hpp"
#include "sanitized.hpp"
#include "test_helpers.hpp"

namespace tessel::scheduler {
namespace {

const std::vector<std::string> kGaudiModels = {"HL-225", "HL-325L"};

class World {
 public:
  explicit World(uint32_t seed) : rng_(seed) {
    if (seed % 2) a_.set_topology_levels({"rack"});
  }

  void run(int ops) {
    for (int i = 0; i < 6; ++i) upsert_random_node("node" + std::to_string(i));
    for (op_ = 0; op_ < ops; ++op_) {
      int r = pick(0, 99);
      if (r < 30) {
        submit_random_jobs();
      } else if (r < 55) {
        schedule();
      } else if (r < 70) {
        finish_random_job();
      } else if (r < 75) {
        cancel_random_pending();
      } else if (r < 83) {
        upsert_random_node("node" + std::to_string(pick(0, 17)));
      } else if (r < 88) {
        lose_random_node();
      } else if (r < 93) {
        drain_random_node();
      } else {
        now_ += pick(1, 200) * 1000;
        expire_jobs();
      }
      check_invariants();
      if (::testing::Test::HasFatalFailure()) return;
    }
  }

  int placed_total = 0;
  int reservations_seen = 0;
  int backfilled_on_reserved = 0;
  int max_queue = 0;
  int constrained_placed = 0;    // Placements of jobs with node constraints.
  int one_rack_placed = 0;       // Gangs with a required topology placed (in one rack).
  int reservation_placed = 0;    // Jobs of a node reservation placed (in its window).
  int placed_before_window = 0;  // Allocations of other jobs on a node with a window ahead.

 private:
  struct Live {
    std::vector<api::Allocation> allocations;
    std::optional<int64_t> end_ms;
  };

  int pick(int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng_); }

  // Gaudi (fixed groups) most often; NVIDIA, AMD, Intel and Moore Threads (any subset),
  // Ascend (HCCS rings) and Neuron (aligned blocks of 1, 4, 8, 16) too.
  api::Vendor random_vendor() {
    static const api::Vendor kVendors[] = {api::Vendor::nvidia,    api::Vendor::amd,    api::Vendor::ascend,
                                           api::Vendor::intel,     api::Vendor::neuron, api::Vendor::habana,
                                           api::Vendor::habana,    api::Vendor::habana, api::Vendor::mthreads,
                                           api::Vendor::cambricon, api::Vendor::tpu};
    return kVendors[pick(0, 10)];
  }
  std::string model_of(api::Vendor v) {
    if (v == api::Vendor::nvidia) return "A100";
    if (v == api::Vendor::amd) return "AMD Instinct MI300X";
    if (v == api::Vendor::ascend) return "910A";
    if (v == api::Vendor::intel) return "Intel(R) Data Center GPU Max 1550";
    if (v == api::Vendor::neuron) return "trn2";
    if (v == api::Vendor::mthreads) return "MTT S5000";
    if (v == api::Vendor::cambricon) return "MLU370-X8";
    if (v == api::Vendor::tpu) return "TPU v5e";
    return kGaudiModels[pick(0, 1)];
  }

  void upsert_random_node(const std::string& name) {
    NodeSpec n;
    n.name = name;
    n.vendor = random_vendor();
    const bool any_subset = api::any_subset_is_valid(n.vendor);
    std::string model = model_of(n.vendor);
    int cards = any_subset ? pick(2, 8) : (pick(0, 3) == 0 ? 4 : 8);
    if (n.vendor == api::Vendor::neuron) cards = std::vector<int>{1, 4, 16, 16}[pick(0, 3)];
    if (n.vendor == api::Vendor::neuron && pick(0, 1) == 0) {  // Inferentia: a ring of 1, 6 or 12.
      model = "inf2";
      cards = std::vector<int>{1, 6, 12}[pick(0, 2)];
    }
    std::vector<int> index(cards);
    for (int i = 0; i < cards; ++i) index[i] = i;
    std::shuffle(index.begin(), index.end(), rng_);
    for (int m = 0; m < cards; ++m) {
      if (pick(0, 19) == 0) continue;  // Missing card.
      // Only Gaudi numbers its cards apart from their slots.
      n.cards.push_back({m, n.vendor == api::Vendor::habana ? index[m] : m, model, pick(0, 9) != 0});
    }
    n.schedulable = pick(0, 9) != 0;
    if (pick(0, 3) != 0) n.cpus = pick(4, 64);  // Else not reported: not counted.
    if (pick(0, 3) != 0) n.memory_mib = pick(1024, 65536);
    if (pick(0, 3) != 0) n.labels["rack"] = "r" + std::to_string(pick(0, 2));
    if (pick(0, 4) == 0) n.labels["fabric"] = "ib";
    add_random_windows(n);
    a_.upsert_node(n);
    nodes_[name] = n;
  }

  // Now and then windows for which the node is reserved (issue 32), open now or ahead:
  // for the reservation "demo" or "team", or for maintenance; not overlapping.
  void add_random_windows(NodeSpec& n) {
    if (pick(0, 3) != 0) return;
    int64_t start = now_ + pick(-300, 900) * 1000;
    for (int w = pick(1, 2); w > 0; --w) {
      const int64_t end = start + pick(60, 900) * 1000;
      const int kind = pick(0, 4);
      n.reservations.push_back(ReservationWindow{kind == 0  ? "fix"
                                                 : kind < 3 ? "demo"
                                                            : "team",
                                                 start, end, kind == 0});
      start = end + pick(0, 600) * 1000;
    }
  }

  void submit_random_jobs() {
    int count = pick(1, 6);
    static const int kSizes[] = {0, 1, 1, 1, 2, 2, 4, 4, 8, 8, 16, 3, 6, 12};
    for (int i = 0; i < count; ++i) {
      PendingJob j;
      j.id = "job" + std::to_string(next_id_++);
      j.seq = next_id_;
      j.devices = kSizes[pick(0, 13)];
      j.nodes = pick(0, 9) == 0 ? pick(2, 4) : 1;
      j.priority = std::vector<int>{0, 0, 0, 1, 5}[pick(0, 4)];
      if (pick(0, 2) != 0) j.time_limit_s = pick(10, 600);
      if (pick(0, 4) == 0) j.vendor = random_vendor();
      if (pick(0, 5) == 0) j.model = model_of(random_vendor());
      if (pick(0, 2) == 0) j.cpus = pick(1, 24);  // Else the node's share for its cards.
      if (pick(0, 3) == 0) j.memory_mib = pick(256, 20000);
      add_random_constraints(j);
      pending_[j.id] = j;
    }
    while (pending_.size() > 300) cancel_random_pending();  // Users give up; keeps passes short.
  }

  // Now and then a node_selector, an exclude list or a nodelist (of nodes known or not);
  // for half the gangs a required or preferred rack.
  void add_random_constraints(PendingJob& j) {
    api::NodeConstraints c;
    if (j.nodes > 1 && pick(0, 1) == 0) (pick(0, 1) == 0 ? c.topology.required : c.topology.preferred) = "rack";
    if (pick(0, 3) == 0) {
      if (pick(0, 1) == 0) c.node_selector["rack"] = "r" + std::to_string(pick(0, 2));
      if (pick(0, 5) == 0) c.node_selector["fabric"] = "ib";
      if (pick(0, 3) == 0) c.exclude.push_back("node" + std::to_string(pick(0, 17)));
      if (pick(0, 3) == 0) {
        const std::string listed = "node" + std::to_string(pick(0, 17));
        if (std::find(c.exclude.begin(), c.exclude.end(), listed) == c.exclude.end()) c.nodelist.push_back(listed);
      }
    }
    if (pick(0, 7) == 0) c.reservation = pick(0, 1) == 0 ? "demo" : "team";
    if (c.empty()) return;
    j.constraints = constraints_.emplace_back(std::make_unique<api::NodeConstraints>(std::move(c))).get();
  }

  // The placement keeps the job's constraints (node_filter.hpp's rules).
  void check_constraints(const PendingJob& j, const Placement& p) {
    if (!j.constraints) return;
    ++constrained_placed;
    const api::NodeConstraints& c = *j.constraints;
    std::set<std::string> placed;
    for (const api::Allocation& al : p.allocations) {
      placed.insert(al.node);
      const NodeSpec& node = nodes_.at(al.node);
      for (const auto& [k, v] : c.node_selector) {
        auto it = node.labels.find(k);
        ASSERT_TRUE(it != node.labels.end() && it->second == v) << j.id << " on " << al.node << " without " << k;
      }
      ASSERT_EQ(std::count(c.exclude.begin(), c.exclude.end(), al.node), 0) << j.id << " on excluded " << al.node;
    }
    for (const std::string& listed : c.nodelist) ASSERT_TRUE(placed.count(listed)) << j.id << " without " << listed;
    if (j.nodes > 1 && !c.topology.required.empty()) {
      std::set<std::string> racks;
      for (const std::string& n : placed) {
        auto it = nodes_.at(n).labels.find(c.topology.required);
        ASSERT_TRUE(it != nodes_.at(n).labels.end()) << j.id << " on " << n << " without a rack";
        racks.insert(it->second);
      }
      if (j.devices > 0) ASSERT_EQ(racks.size(), 1u) << j.id << " across racks";
      ++one_rack_placed;
    }
  }

  std::vector<PendingJob> queue() const {
    std::vector<PendingJob> q;
    for (const auto& [id, j] : pending_) q.push_back(j);
    return q;
  }

  void schedule() {
    // Node state before this pass, for the placement-time checks.
    std::vector<PendingJob> q = queue();
    max_queue = std::max(max_queue, static_cast<int>(q.size()));
    // Nodes within their CPUs and memory stay so: placement never overcommits them
    // (a node re-registered smaller may be over until its jobs end).
    std::set<std::string> within;
    for (const auto& [name, node] : nodes_) {
      const auto res = a_.resources(name);
      if (res.cpus_used <= res.cpus && res.memory_used <= res.memory_mib) within.insert(name);
    }
    ScheduleResult r = a_.schedule(q, now_);
    std::optional<Reservation> resv;
    if (!r.reservations.empty()) {
      resv = r.reservations[0];
      ++reservations_seen;
    }
    std::set<std::string> waiting;
    for (const auto& w : r.pending_reasons.entries()) {
      ASSERT_EQ(q[w.queue_index].id, w.job_id);
      waiting.insert(w.job_id);
    }
    for (const PendingJob& j : q) {
      bool placed = testing::find_placement(r, j.id) != nullptr;
      ASSERT_NE(placed, waiting.count(j.id) > 0) << "job " << j.id << " must be placed xor have a reason";
    }
    for (const Placement& p : r.placed) {
      ASSERT_TRUE(pending_.count(p.job_id)) << p.job_id;
      const PendingJob& j = pending_.at(p.job_id);
      check_placement(j, p);
      if (resv && runs_after(j, pending_.at(resv->job_id))) check_backfill(j, p, *resv);
      if (holds_anything(p)) {
        live_[j.id] =
            Live{p.allocations, j.time_limit_s ? std::optional<int64_t>(now_ + *j.time_limit_s * 1000) : std::nullopt};
      }
      pending_.erase(p.job_id);
      ++placed_total;
    }
    if (resv && resv->start_ms && pending_.count(resv->job_id)) {
      // Backfill may not have delayed the head: a fresh pass (nothing freed) finds
      // a start no later than before.
      ScheduleResult again = a_.schedule(queue(), now_);
      for (const Placement& p : again.placed) {
        const PendingJob& j = pending_.at(p.job_id);
        check_placement(j, p);
        if (holds_anything(p)) {
          live_[j.id] = Live{p.allocations,
                             j.time_limit_s ? std::optional<int64_t>(now_ + *j.time_limit_s * 1000) : std::nullopt};
        }
        if (p.job_id == resv->job_id) {
          ASSERT_LE(now_, *resv->start_ms);
        }
        pending_.erase(p.job_id);
        ++placed_total;
      }
      for (const Reservation& again_resv : again.reservations) {
        if (again_resv.job_id != resv->job_id) continue;
        ASSERT_TRUE(again_resv.start_ms.has_value()) << "op " << op_ << ": reservation start became unknown";
        ASSERT_LE(*again_resv.start_ms, *resv->start_ms) << "op " << op_ << ": backfill delayed " << resv->job_id;
      }
    }
    for (const std::string& name : within) {
      const auto res = a_.resources(name);
      if (res.cpus > 0) ASSERT_LE(res.cpus_used, res.cpus) << "op " << op_ << ": CPUs overcommitted on " << name;
      if (res.memory_mib > 0)
        ASSERT_LE(res.memory_used, res.memory_mib) << "op " << op_ << ": memory overcommitted on " << name;
    }
  }

  // Whether a placement holds cards, CPUs or memory (jobs without cards hold CPUs when they ask).
  static bool holds_anything(const Placement& p) {
    return std::any_of(p.allocations.begin(), p.allocations.end(), [](const api::Allocation& al) {
      return !al.module_ids.empty() || al.cpus > 0 || al.memory_mib > 0;
    });
  }

  // Node reservations (issue 32): a job of a reservation runs only on nodes whose window
  // of that name is open now; any other job on no node with an open window (maintenance
  // or not), and on a node with a window ahead only when its time limit ends before the
  // window starts.
  void check_windows(const PendingJob& j, const Placement& p) {
    const std::string* mine =
        j.constraints != nullptr && !j.constraints->reservation.empty() ? &j.constraints->reservation : nullptr;
    if (mine != nullptr) ++reservation_placed;
    for (const api::Allocation& al : p.allocations) {
      const ReservationWindow* open = nullptr;
      const ReservationWindow* next = nullptr;
      for (const ReservationWindow& w : nodes_.at(al.node).reservations) {
        if (w.start_ms <= now_ && now_ < w.end_ms) open = &w;
        if (w.start_ms > now_ && (next == nullptr || w.start_ms < next->start_ms)) next = &w;
      }
      if (mine != nullptr) {
        ASSERT_TRUE(open != nullptr && open->name == *mine && !open->maintenance)
            << "op " << op_ << ": " << j.id << " of reservation " << *mine << " on " << al.node
            << " outside its window";
        continue;
      }
      ASSERT_TRUE(open == nullptr) << "op " << op_ << ": " << j.id << " on " << al.node << " in the window of "
                                   << open->name;
      if (next == nullptr) continue;
      ++placed_before_window;
      ASSERT_TRUE(j.time_limit_s.has_value())
          << "op " << op_ << ": " << j.id << " without a time limit on " << al.node << " with a window ahead";
      ASSERT_LT(now_ + *j.time_limit_s * 1000, next->start_ms)
          << "op " << op_ << ": " << j.id << " on " << al.node << " runs into the window of " << next->name;
    }
  }

  void check_placement(const PendingJob& j, const Placement& p) {
    ASSERT_EQ(static_cast<int>(p.allocations.size()), j.nodes) << j.id;
    check_constraints(j, p);
    check_windows(j, p);
    std::set<std::string> distinct;
    std::optional<api::Vendor> gang_vendor;
    for (size_t i = 0; i < p.allocations.size(); ++i) {
      const api::Allocation& al = p.allocations[i];
      ASSERT_EQ(al.rank, static_cast<int>(i));
      ASSERT_TRUE(distinct.insert(al.node).second) << j.id << " twice on " << al.node;
      const NodeSpec& node = nodes_.at(al.node);
      ASSERT_TRUE(node.schedulable) << j.id << " placed on unschedulable " << al.node;
      if (j.vendor) {
        ASSERT_EQ(node.vendor, *j.vendor);
      }
      if (gang_vendor) {
        ASSERT_EQ(node.vendor, *gang_vendor);
      }
      gang_vendor = node.vendor;
      ASSERT_EQ(static_cast<int>(al.module_ids.size()), j.devices);
      ASSERT_EQ(al.indices.size(), al.module_ids.size());
      ASSERT_TRUE(std::is_sorted(al.module_ids.begin(), al.module_ids.end()));
      const api::GroupRule rule = api::group_rule(node.vendor, node.cards.empty() ? "" : node.cards[0].model);
      if (j.devices > 0 && rule == api::GroupRule::ring16) {
        // Inferentia: adjacent devices within 0..15.
        ASSERT_EQ(al.module_ids.back() - al.module_ids.front() + 1, j.devices) << j.id << " has a gap";
        ASSERT_LE(al.module_ids.back(), 15) << j.id;
      } else if (j.devices > 0 && rule != api::GroupRule::any_subset) {
        const auto& valid = rule == api::GroupRule::neuron16 ? api::neuron_groups_of_size(j.devices)
                                                             : api::gaudi_groups_of_size(j.devices);
        ASSERT_NE(std::find(valid.begin(), valid.end(), al.module_ids), valid.end())
            << j.id << " got an invalid group on " << al.node;
      }
      if (node.vendor == api::Vendor::ascend && j.devices > 0 && j.devices <= 4) {
        // A 910A board's HCCS rings are {0-3} and {4-7}: a group of up to 4 sits in one.
        ASSERT_EQ(al.module_ids.front() / 4, al.module_ids.back() / 4)
            << j.id << " spans both HCCS rings on " << al.node;
      }
      for (size_t k = 0; k < al.module_ids.size(); ++k) {
        auto card = std::find_if(node.cards.begin(), node.cards.end(),
                                 [&](const NodeSpec::Card& c) { return c.module_id == al.module_ids[k]; });
        ASSERT_NE(card, node.cards.end()) << j.id << " got a missing card";
        ASSERT_TRUE(card->healthy) << j.id << " got an unhealthy card";
        ASSERT_EQ(card->index, al.indices[k]);
        if (!j.model.empty()) {
          ASSERT_EQ(card->model, j.model);
        }
        if (k > 0) {
          ASSERT_LT(al.module_ids[k - 1], al.module_ids[k]);
        }
      }
    }
  }

  // Queue order: priority desc, seq asc, id asc.
  static bool runs_after(const PendingJob& a, const PendingJob& head) {
    return std::make_tuple(-a.priority, a.seq, a.id) > std::make_tuple(-head.priority, head.seq, head.id);
  }

  void check_backfill(const PendingJob& j, const Placement& p, const Reservation& resv) {
    std::set<std::pair<std::string, int>> reserved;
    for (const api::Allocation& al : resv.allocations)
      for (int m : al.module_ids) reserved.insert({al.node, m});
    bool touches = false;
    for (const api::Allocation& al : p.allocations)
      for (int m : al.module_ids) touches = touches || reserved.count({al.node, m}) > 0;
    if (!touches) return;
    ++backfilled_on_reserved;
    ASSERT_TRUE(resv.start_ms.has_value()) << j.id << " backfilled onto cards reserved without a start";
    ASSERT_TRUE(j.time_limit_s.has_value()) << j.id << " without a limit backfilled onto reserved cards";
    ASSERT_LE(now_ + *j.time_limit_s * 1000, *resv.start_ms) << j.id << " would delay " << resv.job_id;
  }

  void finish_random_job() {
    if (live_.empty()) return;
    auto it = std::next(live_.begin(), pick(0, static_cast<int>(live_.size()) - 1));
    a_.release(it->first);
    live_.erase(it);
  }

  void expire_jobs() {
    for (auto it = live_.begin(); it != live_.end();) {
      if (it->second.end_ms && *it->second.end_ms <= now_) {
        a_.release(it->first);
        it = live_.erase(it);
      } else {
        ++it;
      }
    }
  }

  void cancel_random_pending() {
    if (pending_.empty()) return;
    pending_.erase(std::next(pending_.begin(), pick(0, static_cast<int>(pending_.size()) - 1)));
  }

  std::string random_node() { return std::next(nodes_.begin(), pick(0, static_cast<int>(nodes_.size()) - 1))->first; }

  void lose_random_node() {
    std::string name = random_node();
    a_.set_schedulable(name, false);
    nodes_[name].schedulable = false;
    for (auto it = live_.begin(); it != live_.end();) {
      auto& allocs = it->second.allocations;
      bool had = std::any_of(allocs.begin(), allocs.end(), [&](const auto& al) { return al.node == name; });
      if (had) a_.release_on_node(it->first, name);
      allocs.erase(std::remove_if(allocs.begin(), allocs.end(), [&](const auto& al) { return al.node == name; }),
                   allocs.end());
      if (allocs.empty()) {
        it = live_.erase(it);
      } else {
        ++it;
      }
    }
  }

  void drain_random_node() {
    std::string name = random_node();
    bool on = pick(0, 1) == 0;
    a_.set_schedulable(name, on);
    nodes_[name].schedulable = on;
  }

  void check_invariants() {
    std::map<std::pair<std::string, int>, std::string> owner;
    for (const auto& [id, live] : live_) {
      for (const api::Allocation& al : live.allocations) {
        for (int m : al.module_ids) {
          auto [it, inserted] = owner.emplace(std::make_pair(al.node, m), id);
          ASSERT_TRUE(inserted) << "op " << op_ << ": card " << al.node << "/" << m << " held by " << it->second
                                << " and " << id;
        }
      }
    }
    for (const auto& [name, node] : nodes_) {
      for (int m = 0; m < 8; ++m) {
        auto mine = owner.find({name, m});
        std::optional<std::string> expected;
        if (mine != owner.end()) expected = mine->second;
        ASSERT_EQ(a_.holder(name, m), expected) << "op " << op_ << ": " << name << "/" << m;
      }
    }
    auto holdings = a_.holdings();
    const auto with_cards = std::count_if(live_.begin(), live_.end(), [](const auto& l) {
      return std::any_of(l.second.allocations.begin(), l.second.allocations.end(),
                         [](const api::Allocation& al) { return !al.module_ids.empty(); });
    });
    ASSERT_EQ(static_cast<std::ptrdiff_t>(holdings.size()), with_cards) << "op " << op_;
    // What the allocator counts as held on each node is what the live jobs' allocations say.
    std::map<std::string, std::pair<int64_t, int64_t>> held;  // Node -> (CPUs, MiB).
    for (const auto& [id, live] : live_) {
      for (const api::Allocation& al : live.allocations) {
        held[al.node].first += al.cpus;
        held[al.node].second += al.memory_mib;
      }
    }
    for (const auto& [name, node] : nodes_) {
      const auto res = a_.resources(name);
      ASSERT_EQ(res.cpus_used, held[name].first) << "op " << op_ << ": CPUs held on " << name;
      ASSERT_EQ(res.memory_used, held[name].second) << "op " << op_ << ": memory held on " << name;
    }
  }

  std::mt19937 rng_;
  ModuleGroupAllocator a_;
  std::map<std::string, NodeSpec> nodes_;
  std::map<std::string, PendingJob> pending_;
  std::vector<std::unique_ptr<api::NodeConstraints>> constraints_;  // Jobs' constraints, kept for the run.
  std::map<std::string, Live> live_;
  int64_t now_ = 1'700'000'000'000;
  int next_id_ = 0;
  int op_ = 0;
};

class PlacementProperty : public ::testing::TestWithParam<uint32_t> {};

TEST_P(PlacementProperty, InvariantsHoldUnderRandomOperations) {
  // Under ASan (about 10x slower) each seed runs a third of the operations: the same
  // invariants after every one, over a shorter history.
  const int ops = testkit::kSanitized ? 1000 : 3000;
  World w(GetParam());
  w.run(ops);
  // The run must have exercised placement, reservations and backfill onto reserved cards.
  EXPECT_GT(w.placed_total, ops / 6);
  EXPECT_GT(w.reservations_seen, ops / 60);
  EXPECT_GT(w.constrained_placed, ops / 100);  // Node constraints (issue 32) were exercised.
  // And gangs that require one rack: 3 to 5 a seed in the full run; a sanitizer's third
  // of it places none for some seeds (7 and 99991), so only the full run insists.
  if (!testkit::kSanitized) EXPECT_GT(w.one_rack_placed, 0);
  // Node reservations (issue 32): jobs placed in their reservation's window, and others
  // before a window (70 to 115 of each a seed in the full run).
  EXPECT_GT(w.reservation_placed, 0);
  EXPECT_GT(w.placed_before_window, 0);
  RecordProperty("backfilled_on_reserved", w.backfilled_on_reserved);
  std::printf(
      "seed %u: placed %d (%d with node constraints, %d gangs in one rack, %d in a node reservation's window, %d "
      "before a window), reservations %d, backfilled onto reserved cards %d, max queue %d\n",
      GetParam(), w.placed_total, w.constrained_placed, w.one_rack_placed, w.reservation_placed, w.placed_before_window,
      w.reservations_seen, w.backfilled_on_reserved, w.max_queue);
}

INSTANTIATE_TEST_SUITE_P(Seeds, PlacementProperty, ::testing::Values(1u, 7u, 42u, 2024u, 99991u));

}  // namespace
}  // namespace tessel::scheduler
