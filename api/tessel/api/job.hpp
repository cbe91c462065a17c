#pragma once
// Jobs as users submit them (JobSpec) and as the API serves them (Job).
// The JSON forms are the wire contract documented in api/openapi.yaml.

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "tessel/api/inventory.hpp"
#include "tessel/api/json_fields.hpp"
#include "tessel/api/labels.hpp"
#include "tessel/api/signals.hpp"

namespace tessel::api {

// A job array: `count` element jobs, "<parent id>_<index>" for each of its indices
// (0 .. count-1 unless `indices` lists others), each a job of its own, of which at
// most `parallel` are assigned or running at once.
struct ArraySpec {
  int count = 1;     // 1..kMaxArrayCount: how many indices.
  int parallel = 1;  // 1..kMaxArrayCount; a submission without it gets `count` (no limit).
  // Slurm's --array index list without its %P ("5-20", "1,3,7-9", "0-30:10"), as
  // submitted; empty: 0 .. count-1. array_indices() reads it.
  std::string indices;

  bool operator==(const ArraySpec&) const = default;
};
inline constexpr int kMaxArrayCount = 10'000;  // Indices, too, are below it.
inline constexpr size_t kMaxArrayIndicesBytes = 1024;

// Slurm's index list: comma-separated items N, A-B, or A-B:S (every S-th index from A
// up to B), each index 0..kMaxArrayCount-1, in any order; overlaps count once. The
// indices ascending, or why the text is not such a list.
Result<std::vector<int>> parse_array_indices(std::string_view text);
// An array's indices, ascending (`indices` was checked when the spec was parsed).
std::vector<int> array_indices(const ArraySpec& a);

// A bind mount into a job's container: `source` on the node at `target` inside.
struct Mount {
  std::string source;  // Absolute; the agent resolves it and checks it is allowed.
  std::string target;  // Absolute, no "..", not "/" nor under /proc, /sys or /dev.
  bool read_only = false;
  bool operator==(const Mount&) const = default;
};
inline constexpr size_t kMaxMounts = 64;
inline constexpr int64_t kMaxShmSizeMib = int64_t{1} << 20;  // 1 TiB.

// Why `ref` is not an OCI image reference ([registry[:port]/]name[:tag][@digest], name
// components lowercase), or "" when it is one. Never true of text starting with '-'.
std::string image_ref_error(std::string_view ref);

// Where a job may run (issue 32); empty: on any node. Checked at submission: keys and
// values as labels (tessel/api/labels.hpp), node names as nodes register, no node in
// both lists, no more nodes listed than the job asks; the scheduler also refuses
// nodes it does not know.
// A gang's topology (issue 32): a label key that names a level of the network (the
// scheduler's --topology-key, e.g. "rack"). A block is the nodes sharing one value of
// it; nodes without the label are in no block. At most one of the two is set; a
// single-node job ignores both.
struct Topology {
  std::string required;   // All the gang's nodes in one block of this key, or it waits.
  std::string preferred;  // One block of this key if one fits (least waste), else wider levels, else anywhere.

  bool empty() const { return required.empty() && preferred.empty(); }
  bool operator==(const Topology&) const = default;
  auto operator<=>(const Topology&) const = default;  // NOLINT(modernize-use-nullptr): clang-tidy 14 misreads it.
};

struct NodeConstraints {
  Labels node_selector;               // Every pair must be among the node's labels.
  std::vector<std::string> nodelist;  // Each of these nodes is one of the job's (Slurm -w).
  std::vector<std::string> exclude;   // None of these nodes (Slurm -x).
  // A reservation's name (issue 32, part 4): only its nodes, only inside its window, and
  // only for the users and projects it allows (checked by the scheduler at submission).
  std::string reservation;
  Topology topology{};  // JobSpec "topology"; carried here so placement sees it with the rest.

  bool empty() const {
    return node_selector.empty() && nodelist.empty() && exclude.empty() && reservation.empty() && topology.empty();
  }
  bool operator==(const NodeConstraints&) const = default;
};
inline constexpr size_t kMaxNodeList = 1024;  // Names per list.

struct JobSpec {
  std::string name;
  std::vector<std::string> command;  // argv; run without a shell.
  std::map<std::string, std::string> env;
  std::string workdir;
  int devices = 0;  // Cards per node, 0 to 32; which sizes a node can hold: api/topology.hpp.
  int nodes = 1;
  bool task_per_device = false;  // tasks_per_node: "device" (else 1).
  int priority = 0;              // -1000..1000.
  int max_retries = 0;           // 0..10.
  std::optional<int64_t> time_limit_s;
  std::optional<int64_t> kill_grace_s;  // Default kDefaultKillGraceS.
  std::optional<Vendor> vendor;
  std::string model;
  // Only nodes whose driver version matches: equal, or a prefix ending at a version
  // boundary ("1.17" matches "1.17.0-e4d8f8b"); see driver_version_matches().
  std::string driver_version;
  // Dependencies (job ids, "j-00000042"): start only once every job in after_ok
  // succeeded, every one in after_any ended, every one in after_not_ok ended
  // without succeeding.
  std::vector<std::string> after_ok;
  std::vector<std::string> after_any;
  std::vector<std::string> after_not_ok;
  // The project the job's cards count against (quotas, fair share). Empty in a
  // submission: the scheduler fills in the user's default project.
  std::string project;
  // May run on cards borrowed past its project's guarantee (and, once preemption
  // exists, be preempted to give them back).
  bool preemptible = false;
  // Set: the submission makes an array (the parent, and its elements, whose specs
  // are this one, `array` included).
  std::optional<ArraySpec> array;
  // CPUs and memory per node: placement counts them against each node's own, and the
  // agent fences each task to them. 0 (absent on the wire): not asked; the scheduler
  // then gives the node's share for the cards asked (or its defaults for 0 cards).
  int cpus = 0;
  int64_t memory_mib = 0;
  // Containers (issue 29): set, the job's ranks run in this OCI image (podman on the
  // node). `image_pull_always`: pulled before every start ("image_pull": "always"),
  // else only when the node lacks it ("missing"). `mounts`: bind mounts from the node,
  // each source under a directory the node allows (tessel-agent --allow-mount).
  // `shm_size_mib`: a private /dev/shm (and IPC namespace) of that size per container;
  // 0: the host's IPC and /dev/shm, shared by the task's ranks.
  std::string image;
  bool image_pull_always = false;
  std::vector<Mount> mounts;
  int64_t shm_size_mib = 0;
  // node_selector, nodelist and exclude (issue 32).
  NodeConstraints constraints;
  // A warning before the time limit and at preemption (issue 31; signals.hpp).
  std::optional<WarningSignal> signal;

  bool has_dependencies() const { return !after_ok.empty() || !after_any.empty() || !after_not_ok.empty(); }
  bool operator==(const JobSpec&) const = default;
};

inline constexpr int64_t kDefaultKillGraceS = 10;
// Bounds of a job's (and an assignment's) cpus and memory_mib.
inline constexpr int kMaxTaskCpus = 65536;
inline constexpr int64_t kMaxTaskMemoryMib = int64_t{1} << 30;  // 1 PiB.
inline constexpr size_t kMaxDependencies = 100;                 // Per list.
// Totals over a spec's arguments and its env (names and values). Together they stay
// under Linux's 2 MiB limit on what exec() takes, and they bound what every listing
// of jobs has to hold.
inline constexpr size_t kMaxCommandBytes = size_t{256} * 1024;
inline constexpr size_t kMaxEnvBytes = size_t{256} * 1024;

// Bytes of the spec's variable-size parts (arguments, env, workdir, name): what
// dominates its JSON form, for budgets on listings.
size_t spec_payload_bytes(const JobSpec& s);

// Project names: 1 to 64 of [A-Za-z0-9._-], starting with a letter or digit.
bool is_project_name(std::string_view s);
// Reservation names (issue 32): the same rule as project names.
inline bool is_reservation_name(std::string_view s) { return is_project_name(s); }

// "j-" and 8 to 18 digits, as the scheduler makes job ids.
bool is_job_id(std::string_view s);

// Array elements: "<parent id>_<index>". array_element_id("j-00000042", 7) is
// "j-00000042_7"; split_element_id() gives the parent id and index back, or nullopt
// for anything else (a plain job id included).
std::string array_element_id(const std::string& parent, int index);
struct ElementId {
  std::string parent;
  int index = 0;
};
std::optional<ElementId> split_element_id(std::string_view id);

// Variables the scheduler and agent own; a job's env may not set them.
bool is_reserved_env(const std::string& name);

// Strict parse of a submission: unknown fields, wrong types and out-of-range
// values are invalid_argument errors naming the field. Never throws.
Result<JobSpec> parse_job_spec(const nlohmann::json& j);
nlohmann::json to_json(const JobSpec& s);

enum class JobState { pending, assigned, running, succeeded, failed, cancelled };
std::string to_string(JobState s);
std::optional<JobState> parse_job_state(const std::string& s);
bool is_terminal(JobState s);

// Cards of one node given to one rank of a job.
struct Allocation {
  std::string node;
  int rank = 0;                 // Node rank within the job, 0..nodes-1.
  std::vector<int> module_ids;  // Ascending (NVIDIA: indices).
  std::vector<int> indices;     // The matching device indices, same order.
  // The CPUs and memory the job holds on the node (the scheduler resolved them from the
  // spec or the node's share for its cards); 0 (absent on the wire): none held.
  int cpus = 0;
  int64_t memory_mib = 0;

  bool operator==(const Allocation&) const = default;
};
nlohmann::json to_json(const Allocation& a);
Result<Allocation> allocation_from_json(const nlohmann::json& j);

// An array's parent as the API shows it: its elements' states (never stored).
struct ArrayView {
  int count = 0;
  int parallel = 0;
  std::map<JobState, int> states;  // Elements by state; every state is present.
};

// One step of a job's state history (GET /v1/jobs/{id}/events): what happened
// ("submitted", "assigned", "running", "preempted", "requeued", "succeeded",
// "failed", "cancelled"; a user's job control: "held", "released", "updated",
// "signalled", "requeued"), when, the state it left the job in, the attempt it
// belongs to (for "preempted" and "requeued", the attempt that ended), the nodes
// of that attempt, the reason or exit code where there is one, and who asked for
// it (`by`: a user's action; empty for the scheduler's own).
struct JobEvent {
  int64_t at_ms = 0;
  std::string event;
  JobState state = JobState::pending;
  int attempt = 0;
  std::vector<std::string> nodes;
  std::string reason;
  std::optional<int> exit_code;
  std::string by;

  bool operator==(const JobEvent&) const = default;
};
nlohmann::json to_json(const JobEvent& e);
// A job keeps its first event (the submission) and the latest ones, this many in all.
inline constexpr size_t kMaxJobEvents = 100;
// Appends `e`; at kMaxJobEvents it first drops the oldest event but the first.
void add_job_event(std::vector<JobEvent>& events, JobEvent e);

struct Job {
  std::string id;
  std::string name;
  std::string user;
  JobState state = JobState::pending;
  std::string reason;  // Why pending, or why it failed; empty when none.
  JobSpec spec;
  int attempt = 0;
  // Times the job was preempted. Each requeued it as a new attempt that uses no
  // retry: retries used = attempt - preemptions - requeues.
  int preemptions = 0;
  // Times a user requeued it (POST /v1/jobs/{id}/requeue): new attempts that use no retry.
  int requeues = 0;
  int64_t last_preempted_at_ms = 0;  // When it was last preempted; 0 = never.
  // A pending job held by a user (POST /v1/jobs/{id}/hold): who held it; empty when
  // not held. Stored: a held job stays out of placement until released, restarts too.
  std::string held_by;
  // Signals users sent the current attempt's ranks (POST /v1/jobs/{id}/signal), the
  // latest kMaxJobSignals; a new attempt starts with none. Stored, and carried in the
  // attempt's assignments (api::Assignment::signals).
  std::vector<JobSignal> signals;
  std::string last_preempted_by;  // The job that preempted it last.
  // A pending job whose preemption is in flight: the cards it will take once its
  // victims' tasks are gone, and those victims. Stored, so that a restarted
  // scheduler still gives it those cards first; shown only while it is pending.
  std::vector<Allocation> preempt_claim;
  std::vector<std::string> preempt_victims;
  int64_t submitted_at_ms = 0;  // Unix epoch milliseconds; 0 = unset.
  int64_t started_at_ms = 0;
  int64_t finished_at_ms = 0;
  std::optional<int> exit_code;
  // What the last ended attempt's tasks used, as their agents measured it (the task's
  // cgroup: sacct's TotalCPU and MaxRSS): CPU seconds summed over its nodes, and the
  // largest peak memory of one node's task. Absent when no task reported them.
  std::optional<double> cpu_seconds;
  std::optional<int64_t> max_rss_mib;
  std::vector<Allocation> allocations;
  std::string master_addr;
  int master_port = 0;
  std::string endpoint;  // "addr:port" of rank 0's TESSEL_PORT once running.
  // Pending jobs, as of the last scheduling pass (never stored): 1-based place in
  // scheduling order (0: not known), and when the backfill plan expects it to start.
  int queue_position = 0;
  std::optional<int64_t> estimated_start_ms;
  std::optional<ArrayView> array;  // An array's parent, as the API shows it.
  // Its state history, oldest first, at most kMaxJobEvents: stored with the job.
  std::vector<JobEvent> events;
  // An array element as the scheduler keeps and stores it: its spec's command, env and
  // workdir are empty here and are its parent's (share_parent_spec()), so a big spec
  // is held and stored once per array, not once per element. On the wire
  // "spec_from_parent": true, and its spec without those three fields. Never set on a
  // job the API serves or an agent gets (the scheduler puts the parent's back first).
  bool spec_shared = false;
};
nlohmann::json to_json(const Job& j);

// Makes `element` share its parent's spec: empties what share_parent_spec() names.
void share_parent_spec(Job& element);
// The element's whole spec again: the command, env and workdir of `parent`'s.
void take_parent_spec(Job& element, const JobSpec& parent);
Result<Job> job_from_json(const nlohmann::json& j);

// RFC 3339 UTC with milliseconds ("2026-11-30T08:52:32.123Z"); times outside years
// 0001..9999 are clamped to them.
std::string format_rfc3339(int64_t unix_ms);
// Strict RFC 3339 date-time: "Z" or a "+HH:MM"/"-HH:MM" offset, optional fraction (read to
// the millisecond). Anything else, including impossible dates, is nullopt.
std::optional<int64_t> parse_rfc3339(std::string_view s);

}  // namespace tessel::api
