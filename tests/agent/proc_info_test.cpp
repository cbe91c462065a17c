#include "tessel/agent/proc_info.hpp"

#include <gtest/gtest.h>
#include <unistd.h>

using namespace tessel::agent;

TEST(ProcInfo, ParsesStatWithSpacesAndParensInComm) {
  std::string stat = "1234 (my (odd) prog) S 1 1234 1234 0 -1 4194560 1 0 0 0 0 0 0 0 20 0 1 0 987654 1 2 3";
  auto t = parse_stat_start_time(stat);
  ASSERT_TRUE(t.ok()) << t.error().message;
  EXPECT_EQ(*t, 987654u);
  EXPECT_EQ(parse_stat_state(stat), 'S');
  EXPECT_FALSE(parse_stat_start_time("garbage").ok());
  EXPECT_FALSE(parse_stat_start_time("1 (x) S 1 2").ok());
}

TEST(ProcInfo, OwnProcessIsAliveAndStartTimeMustMatch) {
  auto t = process_start_time(static_cast<int>(::getpid()));
  ASSERT_TRUE(t.has_value());
  EXPECT_TRUE(is_same_process_alive(static_cast<int>(::getpid()), *t));
  EXPECT_FALSE(is_same_process_alive(static_cast<int>(::getpid()), *t + 1));
  EXPECT_FALSE(process_start_time(0).has_value());
}
