#pragma once
// tessel-scheduler's command line: its flags as given (SchedulerFlags), read by
// parse_flags() and checked by settle_flags(), which turns them into the service's
// and the replica's options. main.cpp runs what they say.

#include <optional>
#include <string>

#include "tessel/base/result.hpp"
#include "tessel/scheduler/replica.hpp"
#include "tessel/scheduler/service.hpp"

namespace tessel::scheduler {

// The command line as given: parse_flags() fills it, settle_flags() checks it and
// turns the rest into `opts` and the replica options.
struct SchedulerFlags {
  enum class Command { serve, backup, check };
  Command command = Command::serve;
  std::string listen = "127.0.0.1:7450", db_path = "./tessel-scheduler.db", tokens_path, port_range = "29500-29999",
              log_level = "info";
  double heartbeat_timeout_s = 15;
  std::string fairshare_half_life = "7d";
  std::string topology_key;  // --topology-key: label keys, narrowest first, comma-separated.

  double preempt_min_runtime_s = 60, preempt_warning_max_s = 60;
  bool insecure = false;
  double head_timeout_s = 10, body_timeout_s = 30, idle_timeout_s = 60;
  bool max_connections_given = false;  // --http-max-connections was on the command line.
  // Replicas on PostgreSQL (off unless --advertise is given).
  std::string advertise;
  double lease_s = 3, renew_s = 1, follower_max_age_s = 0.5;
  std::string sync = "full";
  // Periodic backups while running (off unless --backup-dir is given).
  std::string backup_dir, backup_every = "1h";
  int backup_keep = 24;
  // The backup and check subcommands.
  std::string backup_to;
  bool backup_force = false, check_quick = false;
  ServiceOptions opts;
};

// Reads the command line into `f`. Returns the exit code when the process ends here
// (--help, a bad flag), else nullopt.
std::optional<int> parse_flags(int argc, char** argv, SchedulerFlags& f);

// Checks the flags the service runs with and turns them into f.opts and `replica`;
// the error names the flag at fault.
Status settle_flags(SchedulerFlags& f, ReplicaOptions& replica);

}  // namespace tessel::scheduler
