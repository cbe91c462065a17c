#include <gtest/gtest.h>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>

#include <spdlog/spdlog.h>

#include "files.hpp"
#include "tessel/log/logging.hpp"

namespace {

// Runs `body` with stderr redirected to a temp file; returns what was written.
template <class F>
std::string capture_stderr(bool as_journal, F body) {
  char path[] = "/tmp/tessel-log-XXXXXX";
  int fd = mkstemp(path);
  EXPECT_GE(fd, 0);
  int saved = dup(2);
  dup2(fd, 2);
  struct stat st {};
  fstat(fd, &st);
  if (as_journal)
    setenv("JOURNAL_STREAM", (std::to_string(st.st_dev) + ":" + std::to_string(st.st_ino)).c_str(), 1);
  else
    unsetenv("JOURNAL_STREAM");
  body();
  spdlog::default_logger()->flush();
  dup2(saved, 2);
  close(saved);
  close(fd);
  unsetenv("JOURNAL_STREAM");
  std::string text = tessel::testkit::read_file(path);
  unlink(path);
  return text;
}

}  // namespace

TEST(Logging, JournalGetsPriorityPrefixes) {
  auto text = capture_stderr(true, [] {
    ASSERT_TRUE(tessel::init_logging("t", "debug"));
    spdlog::warn("disk low");
    spdlog::error("broken");
    spdlog::debug("detail");
  });
  EXPECT_NE(text.find("<4>disk low\n"), std::string::npos) << text;
  EXPECT_NE(text.find("<3>broken\n"), std::string::npos) << text;
  EXPECT_NE(text.find("<7>detail\n"), std::string::npos) << text;
}

TEST(Logging, TerminalGetsTimestampAndLevel) {
  auto text = capture_stderr(false, [] {
    ASSERT_TRUE(tessel::init_logging("t", "info"));
    spdlog::info("hello");
    spdlog::debug("hidden");
  });
  EXPECT_NE(text.find(" info t: hello"), std::string::npos) << text;
  EXPECT_EQ(text.find("hidden"), std::string::npos) << text;
  EXPECT_EQ(text.find("<6>"), std::string::npos) << text;
}

TEST(Logging, UnknownLevelIsAnError) {
  auto s = tessel::init_logging("t", "loud");
  ASSERT_FALSE(s);
  EXPECT_NE(s.error().message.find("--log-level"), std::string::npos);
}
