#include "tessel/agent/report_policy.hpp"

#include <gtest/gtest.h>

using namespace tessel;
using namespace tessel::agent;

namespace {

api::TaskReport running(const std::string& id) { return api::TaskReport{id, api::TaskState::running, {}, {}, "", 0}; }
api::TaskReport exited(const std::string& id, int code) {
  return api::TaskReport{id, api::TaskState::exited, code, {}, "", 0};
}

TEST(ReportPolicy, NothingAcceptedYetIsDue) {
  EXPECT_TRUE(periodic_report_due({}, std::nullopt));
  EXPECT_TRUE(periodic_report_due({running("a")}, std::nullopt));
}

TEST(ReportPolicy, UnchangedRunningTasksAreNotSentAgain) {
  EXPECT_FALSE(periodic_report_due({}, std::vector<api::TaskReport>{}));
  EXPECT_FALSE(periodic_report_due({running("a"), running("b")}, std::vector{running("a"), running("b")}));
}

TEST(ReportPolicy, AnyChangeIsDue) {
  EXPECT_TRUE(periodic_report_due({running("a"), running("b")}, std::vector{running("a")}));
  EXPECT_TRUE(periodic_report_due({running("a")}, std::vector{running("a"), running("b")}));
  auto moved = running("a");
  moved.port = 7;
  EXPECT_TRUE(periodic_report_due({moved}, std::vector{running("a")}));
  EXPECT_TRUE(periodic_report_due({exited("a", 1)}, std::vector{running("a")}));
}

TEST(ReportPolicy, FinishedButUnacknowledgedIsSentEveryTime) {
  EXPECT_TRUE(periodic_report_due({exited("a", 0)}, std::vector{exited("a", 0)}));
  api::TaskReport failed{"b", api::TaskState::failed_to_start, {}, {}, "exec: not found", 0};
  EXPECT_TRUE(periodic_report_due({running("a"), failed}, std::vector{running("a"), failed}));
}

TEST(ReportPolicy, AcknowledgedTasksLeaveWhatTheSchedulerHolds) {
  auto held = without_acknowledged({running("a"), exited("b", 0), exited("c", 2)}, {"b", "zzz"});
  ASSERT_EQ(held.size(), 2u);
  EXPECT_EQ(held[0].assignment_id, "a");
  EXPECT_EQ(held[1].assignment_id, "c");
  // The agent forgot b: its reports now equal what the scheduler holds, and only the
  // unacknowledged c keeps the check sending.
  EXPECT_TRUE(same_reports({running("a"), exited("c", 2)}, held));
  EXPECT_FALSE(periodic_report_due({running("a")}, std::vector{running("a")}));
}

}  // namespace
