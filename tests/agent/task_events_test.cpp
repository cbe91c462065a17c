// The socket supervisors tell the agent about their tasks with (task_events.hpp).
#include "tessel/agent/task_events.hpp"

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <filesystem>
#include <thread>

#include "test_util.hpp"

using namespace tessel;
using namespace tessel::agent;
using namespace std::chrono_literals;

namespace {

class TaskEventsTest : public ::testing::Test {
 protected:
  testkit::TempDir tmp{"tessel-agent-test"};
  std::string root = tmp.str();
  std::string path = events_socket_path(root);
};

TEST(TaskEventsPaths, SocketLivesInTheStateDir) {
  EXPECT_EQ(events_socket_path("/var/lib/tessel-agent"), "/var/lib/tessel-agent/events.sock");
  EXPECT_EQ(events_socket_path("/var/lib/tessel-agent/"), "/var/lib/tessel-agent/events.sock");
  EXPECT_EQ(events_socket_path_for_task("/var/lib/tessel-agent/tasks/j.0.0"), "/var/lib/tessel-agent/events.sock");
  EXPECT_EQ(events_socket_path_for_task("/var/lib/tessel-agent/tasks/j.0.0/"), "/var/lib/tessel-agent/events.sock");
  EXPECT_EQ(events_socket_path_for_task("state/tasks/j.0.0"), "state/events.sock");
}

TEST(TaskEventsPaths, AddressMustFitSunPath) {
  EXPECT_TRUE(unix_socket_address("/" + std::string(106, 'x')).ok());  // 107 bytes + NUL.
  auto too_long = unix_socket_address("/" + std::string(107, 'x'));
  ASSERT_FALSE(too_long.ok());
  EXPECT_NE(too_long.error().message.find("108 bytes"), std::string::npos) << too_long.error().message;
  EXPECT_FALSE(unix_socket_address("").ok());
}

TEST_F(TaskEventsTest, DeliversAssignmentIdsInOrder) {
  auto sock = TaskEventSocket::bind(path);
  ASSERT_TRUE(sock.ok()) << sock.error().message;
  TaskEventSender sender(path);
  sender.send("a.0.0");
  sender.send("b.0.1");
  std::vector<TaskEvent> got;
  ASSERT_TRUE(testkit::eventually(
      [&] {
        auto events = (*sock)->wait(0ms);
        if (events) got.insert(got.end(), events->begin(), events->end());
        return got.size() >= 2;
      },
      10s));
  EXPECT_EQ(got, (std::vector<TaskEvent>{{"a.0.0", ""}, {"b.0.1", ""}}));
  auto none = (*sock)->wait(0ms);
  ASSERT_TRUE(none);
  EXPECT_TRUE(none->empty());
}

TEST_F(TaskEventsTest, WaitBlocksUntilADatagramArrives) {
  auto sock = TaskEventSocket::bind(path);
  ASSERT_TRUE(sock.ok());
  std::thread sender([&] { TaskEventSender(path).send("late.0.0"); });
  auto ids = (*sock)->wait(10s);
  sender.join();
  ASSERT_TRUE(ids);
  ASSERT_FALSE(ids->empty());
  EXPECT_EQ(ids->front().id, "late.0.0");
}

TEST_F(TaskEventsTest, CarriesWhyAResultWasNotWritten) {
  auto sock = TaskEventSocket::bind(path);
  ASSERT_TRUE(sock.ok());
  TaskEventSender sender(path);
  sender.send("a.0.0", "write result.json.tmp: No space left on device");
  sender.send("b.0.0", std::string(5000, 'x'));  // Cut to fit one datagram.
  std::vector<TaskEvent> got;
  ASSERT_TRUE(testkit::eventually(
      [&] {
        auto events = (*sock)->wait(0ms);
        if (events) got.insert(got.end(), events->begin(), events->end());
        return got.size() >= 2;
      },
      10s));
  EXPECT_EQ(got[0], (TaskEvent{"a.0.0", "write result.json.tmp: No space left on device"}));
  EXPECT_EQ(got[1].id, "b.0.0");
  EXPECT_EQ(got[1].note.size(), 1024u - 6u);  // 1024 bytes in all, with "b.0.0\n".
}

TEST_F(TaskEventsTest, InterruptEndsAWaitForGood) {
  auto sock = TaskEventSocket::bind(path);
  ASSERT_TRUE(sock.ok());
  std::optional<std::vector<TaskEvent>> result{std::vector<TaskEvent>{}};
  std::thread waiter([&] { result = (*sock)->wait(); });  // No timeout: only interrupt() ends it.
  (*sock)->interrupt();
  waiter.join();
  EXPECT_FALSE(result);
  EXPECT_FALSE((*sock)->wait());
}

TEST_F(TaskEventsTest, ReplacesAStaleSocketAndRemovesItsOwnOnly) {
  auto first = TaskEventSocket::bind(path);
  ASSERT_TRUE(first.ok());
  // A second agent on the same state dir (a restart that overlapped the old one).
  auto second = TaskEventSocket::bind(path);
  ASSERT_TRUE(second.ok()) << second.error().message;
  first->reset();  // The old one leaves the new socket file alone...
  ASSERT_TRUE(std::filesystem::exists(path));
  TaskEventSender(path).send("x.0.0");
  auto ids = (*second)->wait(10s);
  ASSERT_TRUE(ids);
  EXPECT_EQ(*ids, (std::vector<TaskEvent>{{"x.0.0", ""}}));
  second->reset();  // ...and removes its own.
  EXPECT_FALSE(std::filesystem::exists(path));
}

TEST_F(TaskEventsTest, SendingNeverBlocksOrFails) {
  TaskEventSender(path).send("nobody.0.0");  // No socket: ENOENT, ignored.
  auto sock = TaskEventSocket::bind(path);
  ASSERT_TRUE(sock.ok());
  TaskEventSender sender(path);
  for (int i = 0; i < 1000; ++i) sender.send("flood.0.0");  // Queue full: EAGAIN, ignored.
  auto ids = (*sock)->wait(10s);
  ASSERT_TRUE(ids);
  EXPECT_FALSE(ids->empty());
  TaskEventSender(root + "/" + std::string(200, 'x')).send("too.0.0");  // Too long: logged once, skipped.
}

}  // namespace
