// EpochGuard: answers of an older leader epoch are refused, equal and newer ones
// admitted, the highest seen survives a new guard on the same file (an agent restart).
#include <gtest/gtest.h>

#include <filesystem>

#include "tessel/agent/durable_file.hpp"
#include "tessel/agent/epoch_guard.hpp"
#include "test_util.hpp"

using namespace tessel::agent;

namespace {

class EpochGuardTest : public ::testing::Test {
 protected:
  std::unique_ptr<EpochGuard> open() {
    auto g = EpochGuard::open(path);
    EXPECT_TRUE(g.ok()) << g.error().message;
    return g.ok() ? std::move(*g) : nullptr;
  }
  testkit::TempDir tmp{"tessel-epoch"};
  std::string path = epoch_file_path(tmp.str());
};

TEST_F(EpochGuardTest, OlderIsRefusedEqualAndNewerAdmitted) {
  auto g = open();
  ASSERT_TRUE(g);
  EXPECT_EQ(g->highest(), 0);
  EXPECT_TRUE(g->admit(2, "assignments"));
  EXPECT_EQ(g->highest(), 2);
  EXPECT_TRUE(g->admit(2, "assignments"));
  EXPECT_FALSE(g->admit(1, "assignments"));
  EXPECT_FALSE(g->admit(1, "a registration"));
  EXPECT_EQ(g->refused_total(), 2u);
  EXPECT_TRUE(g->admit(5, "assignments"));
  EXPECT_FALSE(g->admit(4, "assignments"));
  EXPECT_EQ(g->highest(), 5);
}

// Epoch 0 is a scheduler without replicas (or one older than fencing): always admitted,
// never recorded.
TEST_F(EpochGuardTest, ZeroIsAlwaysAdmittedAndNotRecorded) {
  auto g = open();
  ASSERT_TRUE(g);
  EXPECT_TRUE(g->admit(0, "assignments"));
  EXPECT_FALSE(std::filesystem::exists(path));
  EXPECT_TRUE(g->admit(3, "assignments"));
  EXPECT_TRUE(g->admit(0, "assignments"));
  EXPECT_EQ(g->highest(), 3);
  EXPECT_EQ(g->refused_total(), 0u);
}

TEST_F(EpochGuardTest, HighestSurvivesARestart) {
  {
    auto g = open();
    ASSERT_TRUE(g);
    ASSERT_TRUE(g->admit(7, "assignments"));
  }
  auto again = open();
  ASSERT_TRUE(again);
  EXPECT_EQ(again->highest(), 7);
  EXPECT_FALSE(again->admit(6, "assignments"));
  EXPECT_TRUE(again->admit(7, "assignments"));
}

TEST_F(EpochGuardTest, CorruptFileIsAnError) {
  for (const char* bad : {"", "x\n", "-3\n", "12abc", "99999999999999999999999"}) {
    ASSERT_TRUE(write_file_durable(path, bad).ok());
    auto g = EpochGuard::open(path);
    ASSERT_FALSE(g.ok()) << bad;
    EXPECT_NE(g.error().message.find(path), std::string::npos) << g.error().message;
  }
  ASSERT_TRUE(write_file_durable(path, "4\n").ok());
  auto g = EpochGuard::open(path);
  ASSERT_TRUE(g.ok());
  EXPECT_EQ((*g)->highest(), 4);
}

}  // namespace
