#include "tessel/log/logging.hpp"

#include <sys/stat.h>

#include <cerrno>
#include <cstdlib>
#include <memory>

#include <spdlog/pattern_formatter.h>
#include <spdlog/sinks/stdout_sinks.h>
#include <spdlog/spdlog.h>

namespace tessel {

namespace {

// "%*" in a pattern: the syslog priority of the message's level, as "<N>".
class PriorityFlag : public spdlog::custom_flag_formatter {
 public:
  void format(const spdlog::details::log_msg& msg, const std::tm&, spdlog::memory_buf_t& dest) override {
    int prio = 6;  // LOG_INFO
    switch (msg.level) {
      case spdlog::level::trace:
      case spdlog::level::debug: prio = 7; break;
      case spdlog::level::info: prio = 6; break;
      case spdlog::level::warn: prio = 4; break;
      case spdlog::level::err: prio = 3; break;
      case spdlog::level::critical: prio = 2; break;
      default: break;
    }
    const char text[4] = {'<', static_cast<char>('0' + prio), '>', '\0'};
    dest.append(text, text + 3);
  }
  std::unique_ptr<custom_flag_formatter> clone() const override { return std::make_unique<PriorityFlag>(); }
};

}  // namespace

bool stderr_is_journal() {
  const char* js = std::getenv("JOURNAL_STREAM");  // "DEVICE:INODE"
  if (js == nullptr) return false;
  char* end = nullptr;
  errno = 0;
  const unsigned long long dev = std::strtoull(js, &end, 10);
  if (errno != 0 || end == js || *end != ':') return false;
  const char* ino_text = end + 1;
  const unsigned long long ino = std::strtoull(ino_text, &end, 10);
  if (errno != 0 || end == ino_text || *end != '\0') return false;
  struct stat st {};
  if (fstat(2, &st) != 0) return false;
  return st.st_dev == dev && st.st_ino == ino;
}

Status init_logging(const std::string& program, const std::string& level) {
  static const char* const kLevels[] = {"trace", "debug", "info", "warn", "error", "critical", "off"};
  bool known = false;
  for (const char* l : kLevels) known = known || level == l;
  if (!known)
    return Error{"--log-level: unknown level '" + level + "' (trace, debug, info, warn, error, critical, off)"};

  auto sink = std::make_shared<spdlog::sinks::stderr_sink_mt>();
  auto logger = std::make_shared<spdlog::logger>(program, sink);
  auto formatter = std::make_unique<spdlog::pattern_formatter>();
  formatter->add_flag<PriorityFlag>('*');
  formatter->set_pattern(stderr_is_journal() ? "%*%v" : "%Y-%m-%dT%H:%M:%S.%e%z %l %n: %v");
  logger->set_formatter(std::move(formatter));
  logger->set_level(spdlog::level::from_str(level));
  logger->flush_on(spdlog::level::info);
  spdlog::set_default_logger(logger);
  return ok_status();
}

}  // namespace tessel
