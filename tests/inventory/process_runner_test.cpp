// The real Boost.Process runner against the fake vendor tools.
#include <gtest/gtest.h>
#include <signal.h>

#include <chrono>

#include "tessel/agent/command_runner.hpp"
#include "test_util.hpp"

namespace tessel::agent {
namespace {

using namespace std::chrono_literals;
using testing::ScopedEnv;

const std::vector<std::string> kQuery = {FAKE_HL_SMI_PATH, "-Q", "index,module_id,name", "-f", "csv,noheader,nounits"};

TEST(ProcessRunner, CapturesStdoutOfAFinishedTool) {
  ScopedEnv fixture("FAKE_HL_SMI_FIXTURE", testing::fixture_path("hl-smi/gaudi2-hl225-8.csv"));
  ScopedEnv mode("FAKE_HL_SMI_MODE", "normal");
  ProcessRunner runner;
  auto r = runner.run(kQuery, 10s);
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_FALSE(r->timed_out);
  EXPECT_EQ(r->exit_code, 0);
  EXPECT_EQ(r->signal, std::nullopt);
  EXPECT_EQ(r->out.substr(0, 13), "0, 1, HL-225\n");
  EXPECT_EQ(r->err, "");
}

TEST(ProcessRunner, NonZeroExitKeepsStderr) {
  ScopedEnv mode("FAKE_HL_SMI_MODE", "fail");
  ProcessRunner runner;
  auto r = runner.run(kQuery, 10s);
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(r->exit_code, 3);
  EXPECT_NE(r->err.find("failed to open device"), std::string::npos);
}

TEST(ProcessRunner, HungToolIsKilledAtTheDeadline) {
  ScopedEnv mode("FAKE_HL_SMI_MODE", "hang");
  ProcessRunner runner;
  auto start = std::chrono::steady_clock::now();
  auto r = runner.run(kQuery, 300ms);
  auto took = std::chrono::steady_clock::now() - start;
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_TRUE(r->timed_out);
  EXPECT_EQ(r->signal, SIGKILL);
  EXPECT_LT(took, 5s);
}

TEST(ProcessRunner, TimeoutKillsTheWholeProcessGroup) {
  // A child that leaves a grandchild holding the pipes: only a group kill ends both.
  ProcessRunner runner;
  auto start = std::chrono::steady_clock::now();
  auto r = runner.run({"/bin/sh", "-c", "sleep 30 & exec sleep 30"}, 300ms);
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_TRUE(r->timed_out);
  EXPECT_LT(std::chrono::steady_clock::now() - start, 5s);
}

TEST(ProcessRunner, CrashIsReportedAsASignal) {
  ScopedEnv mode("FAKE_HL_SMI_MODE", "crash");
  ProcessRunner runner;
  auto r = runner.run(kQuery, 10s);
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(r->signal, SIGSEGV);
  EXPECT_EQ(r->exit_code, std::nullopt);
}

TEST(ProcessRunner, MissingExecutableIsAnError) {
  ProcessRunner runner;
  auto r = runner.run({"/nonexistent/hl-smi", "-Q", "index"}, 10s);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find("/nonexistent/hl-smi"), std::string::npos) << r.error().message;
  EXPECT_FALSE(runner.run({}, 1s).ok());
}

TEST(ProcessRunner, NoShellBetweenArgumentsAndExec) {
  ProcessRunner runner;
  auto r = runner.run({"/bin/echo", "$(id)", "a;b", "*"}, 10s);
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(r->out, "$(id) a;b *\n");
}

}  // namespace
}  // namespace tessel::agent
