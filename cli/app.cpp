#include "tessel/cli/app.hpp"

#include <functional>

#include <CLI/CLI.hpp>

#include "tessel/cli/job_commands.hpp"
#include "tessel/cli/node_commands.hpp"
#include "tessel/cli/project_commands.hpp"
#include "tessel/cli/reservation_commands.hpp"
#include "tessel/cli/session.hpp"
#include "tessel/cli/usage_commands.hpp"

namespace tessel::cli {

namespace {

constexpr const char* kFooter =
    R"(Server: --server, else $TESSEL_SERVER, else http://127.0.0.1:7450; a comma-separated list
  of a scheduler's replicas is tried in order, and a follower's redirect to the leader followed.
Token:  --token or --token-file, else $TESSEL_TOKEN, else $TESSEL_TOKEN_FILE.
Retry:  a GET whose connection is refused, reset or lost is sent again (--retry N, default 2,
  waiting 0.2 s, 0.4 s, ...); POST, PUT and DELETE never are.
Durations: 90 (seconds), 90s, 15m, 2h, 1d, 1h30m, MM:SS, HH:MM:SS, D-HH:MM:SS.
Exit codes: 0 ok; 1 the server said no or could not be reached; 2 usage error;
  wait: the job's exit code (failed without one or cancelled: 1), 124 on --timeout.)";

// Adds an optional<T> flag that stays unset unless given.
template <class T>
CLI::Option* add_opt(CLI::App* app, const std::string& name, std::optional<T>& target, const std::string& help) {
  return app->add_option_function<T>(
      name, [&target](const T& v) { target = v; }, help);
}

// What the command line holds once parsed: the global flags, every subcommand's
// options, and `action`, the command given (set by its callback while parsing). The
// callbacks refer to it, so it outlives the parse and the action.
struct CommandLine {
  GlobalOptions g;
  std::function<int(Session&)> action;
  SubmitOptions submit;
  JobsOptions jobs;
  std::string show_id;
  std::vector<std::string> cancel_ids, hold_ids, release_ids;
  std::string signal_id, signal_name;
  UpdateOptions update;
  std::vector<std::string> requeue_ids;
  LogsOptions logs;
  WaitOptions wait;
  bool nodes_wide = false;
  std::string token_node, node_name, drain_name, label_node;
  std::vector<std::string> label_args;
  ProjectOptions project;
  ReservationOptions reservation;
  UsageOptions usage;
};

// The flags every command takes: server, token, retries, output format.
void add_global_options(CLI::App& app, GlobalOptions& g) {
  app.add_option("--server", g.server, "Scheduler URL (http://HOST:PORT), or replicas' URLs separated by commas");
  auto* tok = app.add_option("--token", g.token, "API token");
  app.add_option("--token-file", g.token_file, "File holding the API token")->excludes(tok);
  app.add_option("--retry", g.retry, "Send a GET again up to N times when the connection fails (default 2)")
      ->check(CLI::Range(0, 10));
  app.add_option("-o,--output", g.output, "Output format: table or json (the API's JSON, pretty)")
      ->check(CLI::IsMember({"table", "json"}));
}

// tessel submit [flags] -- CMD ARGS...
void add_submit_command(CLI::App& app, CommandLine& cl) {
  SubmitOptions& so = cl.submit;
  auto* submit = app.add_subcommand("submit", "Submit a job: tessel submit [flags] -- CMD ARGS...");
  submit->positionals_at_end();
  add_opt(submit, "--devices", so.devices, "Cards per node, 0 to 32 (Gaudi: 0, 1, 2, 4 or 8)");
  add_opt(submit, "--nodes", so.nodes, "Number of nodes");
  submit->add_flag("--per-device", so.per_device, "One task per card (tasks_per_node=device)");
  add_opt(submit, "--priority", so.priority, "Priority, -1000..1000 (higher first)");
  add_opt(submit, "--time-limit", so.time_limit, "Wall-clock limit (a duration)");
  add_opt(submit, "--kill-grace", so.kill_grace, "Time between SIGTERM and SIGKILL (a duration)");
  add_opt(submit, "--signal", so.signal,
          "Warning signal NAME[@BEFORE] (USR1@120): sent to every rank BEFORE (default 60 s) ahead of the time limit");
  submit->add_option("--env", so.env, "Environment variable KEY=VALUE (repeatable)")->allow_extra_args(false);
  add_opt(submit, "--name", so.name, "Job name");
  add_opt(submit, "--model", so.model, "Card model, e.g. HL-225");
  add_opt(submit, "--driver-version", so.driver_version,
          "Only nodes with this driver version, or one it is a prefix of (\"1.17\" matches 1.17.0-e4d8f8b)");
  add_opt(submit, "--vendor", so.vendor, "habana, nvidia, amd, intel, ascend, neuron, tpu, cambricon or mthreads");
  add_opt(submit, "--project", so.project, "Project the job's cards count against (default: your first project)");
  submit->add_flag("--preemptible", so.preemptible, "May borrow cards past the project's guarantee");
  add_opt(submit, "--retries", so.retries, "Retries after a node failure (0..10)");
  add_opt(submit, "--cpus", so.cpus, "CPUs per node (the task's cpuset on nodes that isolate tasks)");
  add_opt(submit, "--memory", so.memory, "Memory per node, a hard limit: 4096 (MiB), 512M, 64G, 1T");
  add_opt(submit, "--workdir", so.workdir, "Working directory on the node (relative: to the current one)");
  add_opt(submit, "--image", so.image, "Run in this OCI image (podman on the node), e.g. localhost/train:1");
  add_opt(submit, "--image-pull", so.image_pull,
          "Pull the image when the node lacks it (missing) or every time (always)")
      ->check(CLI::IsMember({"missing", "always"}));
  submit
      ->add_option("--mount", so.mounts,
                   "Bind mount SOURCE:TARGET[:ro] into the container (repeatable; SOURCE under a node's --allow-mount)")
      ->allow_extra_args(false);
  add_opt(submit, "--shm-size", so.shm_size, "A private /dev/shm of this size in the container: 512M, 8G");
  submit
      ->add_option("--after-ok", so.after_ok, "Start after these jobs (J1,J2,... or array elements J_7) all succeeded")
      ->allow_extra_args(false);
  submit->add_option("--after-any", so.after_any, "Start after these jobs all ended, however")->allow_extra_args(false);
  submit->add_option("--after-not-ok", so.after_not_ok, "Start after these jobs all ended without succeeding")
      ->allow_extra_args(false);
  submit
      ->add_option("--selector", so.selector,
                   "Only nodes with these labels: KEY=VALUE (repeatable, or comma-separated; all must match)")
      ->allow_extra_args(false);
  submit
      ->add_option("--nodelist,-w", so.nodelist,
                   "These nodes are part of the job (comma-separated or a hostlist such as n[1-4]; as many as "
                   "--nodes at most)")
      ->allow_extra_args(false);
  submit->add_option("--exclude,-x", so.exclude, "Never these nodes (comma-separated or a hostlist such as n[1-4])")
      ->allow_extra_args(false);
  submit->add_option("--reservation", so.reservation, "Run on this reservation's nodes, inside its window");
  add_opt(submit, "--topology", so.topology,
          "A gang's nodes share one value of a node label: required=KEY (it waits for such nodes) or "
          "preferred=KEY (tried first), e.g. required=rack");
  add_opt(submit, "--array", so.array,
          "Job array INDICES[%P] as Slurm's: 0-99, 5-20, 1,3,7-9, 0-30:10; at most P running at once");
  submit->add_option("command", so.command, "The program and its arguments (after --)");
  submit->callback([&cl] { cl.action = [&cl](Session& s) { return cmd_submit(s, cl.submit); }; });
}

// jobs, show, cancel, hold, release, signal, logs and wait: reading and controlling jobs.
void add_job_commands(CLI::App& app, CommandLine& cl) {
  auto* jobs = app.add_subcommand("jobs", "List jobs (default: not yet finished)");
  jobs->add_option("--state", cl.jobs.state, "Only jobs in this state");
  jobs->add_flag("--all,-a", cl.jobs.all, "Include finished jobs");
  jobs->add_option("--user,-u", cl.jobs.user, "Only this user's jobs");
  jobs->callback([&cl] { cl.action = [&cl](Session& s) { return cmd_jobs(s, cl.jobs); }; });

  auto* show = app.add_subcommand("show", "Show one job");
  show->add_option("job", cl.show_id, "Job id")->required();
  show->callback([&cl] { cl.action = [&cl](Session& s) { return cmd_show(s, cl.show_id); }; });

  auto* cancel = app.add_subcommand("cancel", "Cancel jobs");
  cancel->add_option("jobs", cl.cancel_ids, "Job ids")->required();
  cancel->callback([&cl] { cl.action = [&cl](Session& s) { return cmd_cancel(s, cl.cancel_ids); }; });

  auto* hold = app.add_subcommand("hold", "Hold pending jobs (an array: its pending elements) out of the queue");
  hold->add_option("jobs", cl.hold_ids, "Job ids")->required();
  hold->callback([&cl] { cl.action = [&cl](Session& s) { return cmd_control(s, "hold", cl.hold_ids); }; });

  auto* release = app.add_subcommand("release", "Release held jobs back into the queue");
  release->add_option("jobs", cl.release_ids, "Job ids")->required();
  release->callback([&cl] { cl.action = [&cl](Session& s) { return cmd_control(s, "release", cl.release_ids); }; });

  auto* sig = app.add_subcommand("signal", "Send a signal to every rank of a running job");
  sig->add_option("job", cl.signal_id, "Job id")->required();
  sig->add_option("signal", cl.signal_name, "USR1, USR2, TERM, INT, HUP, URG or CONT (SIG prefix optional)")
      ->required();
  sig->callback([&cl] { cl.action = [&cl](Session& s) { return cmd_signal(s, cl.signal_id, cl.signal_name); }; });

  auto* update = app.add_subcommand("update", "Change a pending job's priority, time limit or name");
  update->add_option("job", cl.update.id, "Job id")->required();
  add_opt(update, "--priority", cl.update.priority, "-1000 to 1000 (raising it is for admins)");
  add_opt(update, "--time-limit", cl.update.time_limit, "A duration (lengthening it is for admins)");
  add_opt(update, "--name", cl.update.name, "A name to show");
  update->callback([&cl] { cl.action = [&cl](Session& s) { return cmd_update(s, cl.update); }; });

  auto* requeue = app.add_subcommand("requeue", "Stop running jobs and put them back in the queue (no retry used)");
  requeue->add_option("jobs", cl.requeue_ids, "Job ids")->required();
  requeue->callback([&cl] { cl.action = [&cl](Session& s) { return cmd_control(s, "requeue", cl.requeue_ids); }; });

  auto* logs = app.add_subcommand("logs", "Print a job's output (one rank)");
  logs->add_option("job", cl.logs.id, "Job id")->required();
  logs->add_option("--rank,-r", cl.logs.rank, "Rank whose output to print (default 0)")->check(CLI::NonNegativeNumber);
  logs->add_flag("--follow,-f", cl.logs.follow, "Keep printing until the job ends");
  logs->callback([&cl] { cl.action = [&cl](Session& s) { return cmd_logs(s, cl.logs); }; });

  auto* wait = app.add_subcommand("wait", "Wait until a job ends; exit with its exit code");
  wait->add_option("job", cl.wait.id, "Job id")->required();
  add_opt(wait, "--timeout", cl.wait.timeout, "Give up after this long (exit 124)");
  wait->callback([&cl] { cl.action = [&cl](Session& s) { return cmd_wait(s, cl.wait); }; });
}

// nodes (and its token subcommands), node, inventory, drain, undrain, delete-node.
void add_node_commands(CLI::App& app, CommandLine& cl) {
  auto* nodes = app.add_subcommand("nodes", "List nodes with a map of their cards");
  nodes->add_flag("--wide", cl.nodes_wide, "Also show driver and firmware versions and NIC ports up");
  auto* node_token = nodes->add_subcommand("token", "Agent tokens issued per node (admin)");
  node_token->require_subcommand(1);
  auto* token_issue =
      node_token->add_subcommand("issue", "Issue a node's agent token, or rotate it; prints it (shown once)");
  token_issue->add_option("node", cl.token_node, "Node name")->required();
  token_issue->callback([&cl] { cl.action = [&cl](Session& s) { return cmd_node_token_issue(s, cl.token_node); }; });
  auto* token_revoke = node_token->add_subcommand("revoke", "Revoke a node's issued agent token");
  token_revoke->add_option("node", cl.token_node, "Node name")->required();
  token_revoke->callback([&cl] { cl.action = [&cl](Session& s) { return cmd_node_token_revoke(s, cl.token_node); }; });
  auto* token_list = node_token->add_subcommand("list", "The nodes with an issued agent token, and when it was issued");
  token_list->callback([&cl] { cl.action = [](Session& s) { return cmd_node_token_list(s); }; });
  // After its subcommands' callbacks: lists only when none was given.
  nodes->callback([&cl, node_token] {
    if (!node_token->parsed()) cl.action = [&cl](Session& s) { return cmd_nodes(s, cl.nodes_wide); };
  });

  auto* node = app.add_subcommand("node", "Show one node and its cards");
  node->add_option("name", cl.node_name, "Node name");
  auto* label = node->add_subcommand(
      "label", "Set a node's labels (admin): tessel node label NODE KEY=VALUE... KEY-... (KEY- removes)");
  label->add_option("node", cl.label_node, "Node name")->required();
  label->add_option("labels", cl.label_args, "KEY=VALUE to set, KEY- to remove")->required();
  label->callback([&cl] { cl.action = [&cl](Session& s) { return cmd_node_label(s, cl.label_node, cl.label_args); }; });
  // After its subcommand's callback: shows the node only when none was given.
  node->callback([&cl, label] {
    if (label->parsed()) return;
    if (cl.node_name.empty()) throw CLI::RequiredError("name");
    cl.action = [&cl](Session& s) { return cmd_node(s, cl.node_name); };
  });

  auto* inventory = app.add_subcommand("inventory", "Cards in the cluster by model");
  inventory->callback([&cl] { cl.action = [](Session& s) { return cmd_inventory(s); }; });

  auto* drain = app.add_subcommand("drain", "Stop placing new jobs on a node");
  drain->add_option("node", cl.drain_name, "Node name")->required();
  drain->callback([&cl] { cl.action = [&cl](Session& s) { return cmd_drain(s, cl.drain_name, true); }; });
  auto* undrain = app.add_subcommand("undrain", "Place jobs on a drained node again");
  undrain->add_option("node", cl.drain_name, "Node name")->required();
  undrain->callback([&cl] { cl.action = [&cl](Session& s) { return cmd_drain(s, cl.drain_name, false); }; });
  auto* delete_node = app.add_subcommand("delete-node", "Forget a node that holds no cards (admin)");
  delete_node->add_option("node", cl.drain_name, "Node name")->required();
  delete_node->callback([&cl] { cl.action = [&cl](Session& s) { return cmd_delete_node(s, cl.drain_name); }; });
}

// project list|show|create|set|delete.
void add_project_commands(CLI::App& app, CommandLine& cl) {
  ProjectOptions& po = cl.project;
  auto* project = app.add_subcommand("project", "Projects: shares and quotas (writes need an admin token)");
  project->require_subcommand(1);
  auto* plist = project->add_subcommand("list", "List projects with their fair-share factor and usage");
  plist->callback([&cl] { cl.action = [](Session& s) { return cmd_project_list(s); }; });
  auto* pshow = project->add_subcommand("show", "Show one project");
  pshow->add_option("name", po.name, "Project name")->required();
  pshow->callback([&cl] { cl.action = [&cl](Session& s) { return cmd_project_show(s, cl.project.name); }; });
  for (bool create : {true, false}) {
    auto* w = project->add_subcommand(create ? "create" : "set",
                                      create ? "Create a project" : "Create or replace a project (all its settings)");
    w->add_option("name", po.name, "Project name")->required();
    add_opt(w, "--shares", po.shares, "Fair-share weight (>= 1, default 1)");
    add_opt(w, "--max-active-jobs-per-user", po.max_active_jobs_per_user,
            "Jobs not yet ended one user may have in the project (array elements each)");
    w->add_option("--quota", po.quotas, "MODEL=MAX or MODEL=GUARANTEED:MAX ('*': any model; MAX 'none'), repeatable")
        ->allow_extra_args(false);
    w->callback(
        [&cl, create] { cl.action = [&cl, create](Session& s) { return cmd_project_write(s, cl.project, create); }; });
  }
  auto* pdel = project->add_subcommand("delete", "Delete a project without unfinished jobs");
  pdel->add_option("name", po.name, "Project name")->required();
  pdel->callback([&cl] { cl.action = [&cl](Session& s) { return cmd_project_delete(s, cl.project.name); }; });
}

// reservation create|list|show|delete (issue 32; admins).
void add_reservation_commands(CLI::App& app, CommandLine& cl) {
  ReservationOptions& ro = cl.reservation;
  auto* resv = app.add_subcommand("reservation", "Nodes reserved for a window (admin token)");
  resv->require_subcommand(1);
  auto* create = resv->add_subcommand("create", "Reserve nodes for a window");
  create->add_option("name", ro.name, "Reservation name")->required();
  create->add_option("--nodes", ro.nodes, "The nodes (comma-separated or a hostlist such as n[1-4]), or --count")
      ->allow_extra_args(false);
  add_opt(create, "--count", ro.count, "How many nodes the scheduler picks (with --selector)");
  create->add_option("--selector", ro.selector, "With --count: only nodes with KEY=VALUE (repeatable)")
      ->allow_extra_args(false);
  create->add_option("--start", ro.start, "RFC 3339 time or unix seconds (default: now)");
  create->add_option("--end", ro.end, "RFC 3339 time or unix seconds")->required();
  create->add_option("--users", ro.users, "Users who may submit with --reservation (comma-separated)")->delimiter(',');
  create->add_option("--projects", ro.projects, "Projects whose jobs may use it (comma-separated)")->delimiter(',');
  create->add_flag("--maintenance", ro.maintenance, "No job runs on the nodes during the window");
  create->callback([&cl] { cl.action = [&cl](Session& s) { return cmd_reservation_create(s, cl.reservation); }; });
  auto* list = resv->add_subcommand("list", "List reservations");
  list->callback([&cl] { cl.action = [](Session& s) { return cmd_reservation_list(s); }; });
  auto* show = resv->add_subcommand("show", "Show one reservation");
  show->add_option("name", ro.name, "Reservation name")->required();
  show->callback([&cl] { cl.action = [&cl](Session& s) { return cmd_reservation_show(s, cl.reservation.name); }; });
  auto* del = resv->add_subcommand("delete", "Delete a reservation");
  del->add_option("name", ro.name, "Reservation name")->required();
  del->callback([&cl] { cl.action = [&cl](Session& s) { return cmd_reservation_delete(s, cl.reservation.name); }; });
}

// usage: card-hours of ended jobs.
void add_usage_command(CLI::App& app, CommandLine& cl) {
  UsageOptions& uo = cl.usage;
  auto* usage = app.add_subcommand("usage", "Card-hours of ended jobs by project or user and model (accounting)");
  usage->add_option("--by", uo.by, "project (default) or user")->check(CLI::IsMember({"project", "user"}));
  usage->add_option("--since", uo.since, "Window start: RFC 3339 or a duration ago (7d); default 30 days ago");
  usage->add_option("--until", uo.until, "Window end: RFC 3339 or a duration ago; default now");
  usage->add_option("--project", uo.project, "Only this project's jobs");
  usage->add_option("--user", uo.user, "Only this user's jobs");
  usage->add_flag("--json", uo.json, "The API's JSON (as -o json)");
  usage->callback([&cl] { cl.action = [&cl](Session& s) { return cmd_usage(s, cl.usage); }; });
}

}  // namespace

int run(const std::vector<std::string>& args, Environment& env) {
  CLI::App app{"tessel: submit and inspect jobs on a Tessel accelerator cluster", "tessel"};
  app.footer(kFooter);
  app.require_subcommand(1);
  app.fallthrough();  // Global flags may follow the subcommand: `tessel jobs -o json`.

  CommandLine cl;
  add_global_options(app, cl.g);
  add_submit_command(app, cl);
  add_job_commands(app, cl);
  add_node_commands(app, cl);
  add_project_commands(app, cl);
  add_reservation_commands(app, cl);
  add_usage_command(app, cl);

  try {
    std::vector<std::string> rev(args.rbegin(), args.rend());
    if (!rev.empty()) rev.pop_back();  // Program name.
    app.parse(rev);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e, env.out, env.err);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e, env.out, env.err);
  } catch (const CLI::ParseError& e) {
    std::string what = e.what();
    if (what.empty()) what = e.get_name();
    env.err << "tessel: " << what << " (see tessel --help)\n";
    return kExitUsage;
  }
  if (!cl.action) {
    env.err << "tessel: no command given (see tessel --help)\n";
    return kExitUsage;
  }
  try {
    Session s(env, cl.g);
    return cl.action(s);
  } catch (const std::exception& e) {
    // Should not happen: the layers below return errors as values. Fail loudly, in one line.
    env.err << "tessel: internal error: " << e.what() << '\n';
    return kExitFailure;
  }
}

}  // namespace tessel::cli
