#pragma once
// The per-task supervisor: a small process of our own, started detached by the
// agent (see launcher.hpp), that outlives agent restarts.
//
// run_supervisor(task_dir):
//   1. records supervisor.json (own pid + /proc starttime), durably;
//   2. starts every rank of launch.json with Boost.Process: no shell, program found
//      via the rank env's PATH when not absolute, in its own session and process
//      group, as the plan's uid/gid when set, stdout+stderr appended to the rank's log,
//      stdin from /dev/null, in the plan's workdir: the job's own entered as the job's
//      user (a directory that user cannot enter fails the start: "workdir /x: No such
//      file or directory"), the agent's per-task dir entered before switching user;
//   3. waits; on SIGTERM/SIGINT (the agent's stop request) or when time_limit_s
//      passes, sends SIGTERM to every rank's process group, then SIGKILL after
//      kill_grace_s. When a rank exits, its process group is SIGKILLed to catch
//      stragglers; when a rank fails (non-zero or signal) the other ranks are stopped;
//   4. writes result.json (temp + fsync + rename) and returns its exit status.
// Once its ranks have started (2), and once result.json is durable (4), it tells the
// agent through <state_dir>/events.sock (task_events.hpp), when the agent listens.
// When result.json cannot be written (a full or read-only disk), it tells the agent
// why instead, and the agent reports the result as not recorded.
// Blocks SIGTERM/SIGINT/SIGCHLD in the calling thread; call it from a fresh process.

#include <string>

namespace tessel::agent {

int run_supervisor(const std::string& task_dir);

}  // namespace tessel::agent
