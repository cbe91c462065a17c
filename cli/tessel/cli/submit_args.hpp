#pragma once
// `tessel submit` flags -> the POST /v1/jobs request body. Pure: no I/O.

#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "tessel/base/result.hpp"

namespace tessel::cli {

// What the user typed; unset optionals are left out of the request so the
// server's defaults apply.
struct SubmitOptions {
  std::vector<std::string> command;  // After "--"; required.
  std::optional<std::string> name;
  std::optional<int> devices;
  std::optional<int> nodes;
  bool per_device = false;  // tasks_per_node "device".
  std::optional<int> priority;
  std::optional<int> retries;             // max_retries.
  std::optional<std::string> time_limit;  // A duration (see duration.hpp).
  std::optional<std::string> kill_grace;  // A duration.
  std::optional<std::string> signal;      // The warning signal, NAME[@BEFORE] (Slurm's --signal).
  std::vector<std::string> env;           // "KEY=VALUE"; a later KEY wins.
  std::optional<std::string> workdir;     // Relative paths are resolved against cwd.
  std::optional<std::string> vendor;
  std::optional<std::string> model;
  std::optional<std::string> driver_version;
  std::optional<std::string> project;  // None: the user's default project.
  bool preemptible = false;
  // Dependencies: job ids, each flag value a comma-separated list (repeatable).
  std::vector<std::string> after_ok;
  std::vector<std::string> after_any;
  std::vector<std::string> after_not_ok;
  // A job array in Slurm's syntax: "0-B" (elements 0..B) or "0-B%P" (at most P at
  // once). Ranges start at 0 for now; others are refused.
  std::optional<std::string> array;
  std::optional<int> cpus;            // Per node.
  std::optional<std::string> memory;  // Per node: "4096" (MiB), "512M", "64G", "1T".
  // Containers: the image, its pull policy ("missing", "always"), bind mounts as
  // "SOURCE:TARGET" or "SOURCE:TARGET:ro" (repeatable), and a /dev/shm size ("8G").
  std::optional<std::string> image;
  std::optional<std::string> image_pull;
  std::vector<std::string> mounts;
  std::optional<std::string> shm_size;
  // Where the job may run (issue 32): --selector KEY=VALUE (node_selector; repeatable,
  // or comma-separated), --nodelist and --exclude as Slurm's -w and -x (node names,
  // comma-separated, repeatable).
  std::vector<std::string> selector;
  std::vector<std::string> nodelist;
  std::vector<std::string> exclude;
  // --reservation NAME: only that reservation's nodes, inside its window.
  std::string reservation;
  // --topology required=KEY or preferred=KEY: a gang's nodes share one value of label KEY.
  std::optional<std::string> topology;
};

// "64G" -> 65536: a memory size in MiB. No suffix: MiB; M, G, T (binary; "GiB", "GB" too).
Result<int64_t> parse_memory_mib(const std::string& text);

// The request body. Errors (a usage problem: bad duration, env without '=', empty
// command) name the flag: "--time-limit: invalid duration 'x': ...".
// The server does the full validation of values (device counts, ranges).
Result<nlohmann::json> build_job_request(const SubmitOptions& o, const std::string& cwd);

}  // namespace tessel::cli
