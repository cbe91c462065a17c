// --run-as and the safe default: an agent running as root never runs jobs as root
// unless told so.
#include "tessel/agent/run_as.hpp"

#include <gtest/gtest.h>

namespace tessel::agent {
namespace {

std::optional<PasswdEntry> users(const std::string& name) {
  if (name == "root") return PasswdEntry{0, 0, "/root"};
  if (name == "tessel-jobs") return PasswdEntry{998, 997, "/var/lib/tessel-jobs"};
  if (name == "alice") return PasswdEntry{1000, 1000, "/home/alice"};
  return std::nullopt;
}

TEST(RunAs, RootWithoutRunAsRefusesToStartNamingTheFlag) {
  auto r = resolve_run_as("", 0, users);
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().field, "--run-as");
  EXPECT_NE(r.error().message.find("--run-as root"), std::string::npos) << r.error().message;
  EXPECT_NE(r.error().message.find(kDefaultJobsUser), std::string::npos) << r.error().message;
}

TEST(RunAs, RootSwitchesToTheNamedUserRootOnlyWhenNamed) {
  auto jobs = resolve_run_as("tessel-jobs", 0, users);
  ASSERT_TRUE(jobs && *jobs);
  EXPECT_EQ((*jobs)->uid, 998);
  EXPECT_EQ((*jobs)->gid, 997);
  EXPECT_EQ((*jobs)->user, "tessel-jobs");
  EXPECT_EQ((*jobs)->home, "/var/lib/tessel-jobs");
  auto root = resolve_run_as("root", 0, users);
  ASSERT_TRUE(root && *root);
  EXPECT_EQ((*root)->uid, 0);
}

TEST(RunAs, AnAgentThatIsNotRootRunsJobsAsItself) {
  auto none = resolve_run_as("", 1000, users);
  ASSERT_TRUE(none);
  EXPECT_FALSE(*none);
  auto self = resolve_run_as("alice", 1000, users);
  ASSERT_TRUE(self);
  EXPECT_FALSE(*self);  // Nothing to switch.
  auto other = resolve_run_as("tessel-jobs", 1000, users);
  ASSERT_FALSE(other);
  EXPECT_NE(other.error().message.find("needs the agent to run as root"), std::string::npos);
}

TEST(RunAs, UnknownUserIsAnError) {
  for (uid_t euid : {0u, 1000u}) {
    auto r = resolve_run_as("mallory", euid, users);
    ASSERT_FALSE(r);
    EXPECT_EQ(r.error().message, "--run-as: no user 'mallory'");
  }
}

TEST(RunAs, SystemLookupFindsRoot) {
  auto root = lookup_system_user("root");
  ASSERT_TRUE(root);
  EXPECT_EQ(root->uid, 0u);
  EXPECT_FALSE(lookup_system_user("no-such-user-tessel-test"));
}

}  // namespace
}  // namespace tessel::agent
