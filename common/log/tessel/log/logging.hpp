#pragma once
// Process-wide logging set-up shared by tessel-scheduler and tessel-agent:
// levelled lines on stderr. Under systemd (JOURNAL_STREAM names our stderr)
// each line starts with the sd-daemon priority prefix "<N>" so journald keeps
// the level, and the timestamp is left to journald; otherwise lines carry
// their own timestamp and level name.

#include <string>

#include "tessel/base/result.hpp"

namespace tessel {

// Valid levels: trace, debug, info, warn, error, critical, off.
Status init_logging(const std::string& program, const std::string& level);

// True when stderr is connected to the journal (JOURNAL_STREAM matches its device and inode).
bool stderr_is_journal();

}  // namespace tessel
