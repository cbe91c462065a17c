// ActiveJobs: the running jobs by sequence and by node, kept consistent through
// inserts, re-inserts and erases.
#include <gtest/gtest.h>

#include <set>
#include <vector>

#include "tessel/scheduler/active_jobs.hpp"

namespace tessel::scheduler {
namespace {

api::Allocation on(const std::string& node, int rank) {
  api::Allocation a;
  a.node = node;
  a.rank = rank;
  return a;
}

std::vector<int64_t> all(const ActiveJobs& a) { return {a.begin(), a.end()}; }

TEST(ActiveJobs, FindsEachJobOnEveryNodeItRunsOn) {
  ActiveJobs a;
  a.insert(7, {on("n1", 0), on("n2", 1)});
  a.insert(3, {on("n2", 0)});
  a.insert(5, {on("n1", 0), on("n1", 1)});  // two ranks on one node: listed once
  EXPECT_EQ(all(a), (std::vector<int64_t>{3, 5, 7}));
  EXPECT_EQ(a.on("n1"), (std::set<int64_t>{5, 7}));
  EXPECT_EQ(a.on("n2"), (std::set<int64_t>{3, 7}));
  EXPECT_TRUE(a.on("n3").empty());
  EXPECT_EQ(a.size(), 3u);
  EXPECT_TRUE(a.contains(5));
}

TEST(ActiveJobs, EraseTakesAJobOffEveryNode) {
  ActiveJobs a;
  a.insert(7, {on("n1", 0), on("n2", 1)});
  a.insert(3, {on("n2", 0)});
  a.erase(7);
  EXPECT_TRUE(a.on("n1").empty());
  EXPECT_EQ(a.on("n2"), (std::set<int64_t>{3}));
  EXPECT_EQ(all(a), (std::vector<int64_t>{3}));
  a.erase(7);   // not there: nothing happens
  a.erase(42);  // never there
  EXPECT_EQ(a.size(), 1u);
  a.erase(3);
  EXPECT_TRUE(a.empty());
  EXPECT_TRUE(a.on("n2").empty());
}

TEST(ActiveJobs, ReinsertMovesAJobToItsNewNodes) {
  ActiveJobs a;
  a.insert(7, {on("n1", 0)});
  a.insert(7, {on("n2", 0), on("n3", 1)});  // requeued and placed elsewhere
  EXPECT_TRUE(a.on("n1").empty());
  EXPECT_EQ(a.on("n2"), (std::set<int64_t>{7}));
  EXPECT_EQ(a.on("n3"), (std::set<int64_t>{7}));
  EXPECT_EQ(a.size(), 1u);
  a.insert(8, {});  // no allocation yet: active, on no node
  EXPECT_TRUE(a.contains(8));
  a.erase(8);
  EXPECT_FALSE(a.contains(8));
}

}  // namespace
}  // namespace tessel::scheduler
