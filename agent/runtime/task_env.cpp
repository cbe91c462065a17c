#include "tessel/agent/task_env.hpp"

#include "tessel/agent/device_env.hpp"

namespace tessel::agent {

int local_world_size(const api::Assignment& a) {
  if (!a.spec.task_per_device) return 1;
  return a.module_ids.empty() ? 1 : static_cast<int>(a.module_ids.size());
}

Result<Env> task_environment(const TaskEnvInput& in) {
  const api::Assignment& a = in.assignment;
  const int lws = local_world_size(a);
  if (in.local_rank < 0 || in.local_rank >= lws) return Error{"local rank out of range"};
  Env env = in.base;
  for (const auto& [k, v] : a.spec.env) env[k] = v;

  const api::Vendor vendor = a.spec.vendor.value_or(in.inventory.vendor);
  if (auto st = add_device_env(env, vendor, a, in.inventory); !st) return st.error();
  if (vendor == api::Vendor::habana) {
    if (!a.spec.env.count("PT_ENABLE_INT64_SUPPORT")) env["PT_ENABLE_INT64_SUPPORT"] = "1";
    if (a.spec.task_per_device && !a.module_ids.empty())
      env["HLS_MODULE_ID"] = std::to_string(a.module_ids.at(static_cast<size_t>(in.local_rank)));
  }

  env["TESSEL_JOB_ID"] = a.job_id;
  env["TESSEL_NODE"] = in.node;
  env["TESSEL_ASSIGNMENT_ID"] = a.id;
  env["TESSEL_PORT"] = std::to_string(in.port);
  if (a.preemptions > 0) env["TESSEL_PREEMPTED"] = "1";  // It may resume from its checkpoint.
  env["RANK"] = std::to_string(a.node_rank * lws + in.local_rank);
  env["WORLD_SIZE"] = std::to_string(a.nnodes * lws);
  env["LOCAL_RANK"] = std::to_string(in.local_rank);
  env["LOCAL_WORLD_SIZE"] = std::to_string(lws);
  env["NODE_RANK"] = std::to_string(a.node_rank);
  env["MASTER_ADDR"] = a.master_addr;
  env["MASTER_PORT"] = std::to_string(a.master_port);
  if (auto element = api::split_element_id(a.job_id); element && a.spec.array) {
    env["TESSEL_ARRAY_ID"] = element->parent;
    env["TESSEL_ARRAY_INDEX"] = std::to_string(element->index);
    env["TESSEL_ARRAY_COUNT"] = std::to_string(a.spec.array->count);
    const std::vector<int> indices = api::array_indices(*a.spec.array);
    if (!indices.empty()) {
      env["TESSEL_ARRAY_MIN"] = std::to_string(indices.front());
      env["TESSEL_ARRAY_MAX"] = std::to_string(indices.back());
    }
  }
  if (!a.spec.task_per_device) {
    // One task per node: a launcher in it (torchrun) spawns the node's processes and
    // reads its settings from PET_*; a value the job set itself is kept.
    const int cards = static_cast<int>(a.module_ids.size());
    const Env launcher = {{"PET_NNODES", std::to_string(a.nnodes)},
                          {"PET_NODE_RANK", std::to_string(a.node_rank)},
                          {"PET_MASTER_ADDR", a.master_addr},
                          {"PET_MASTER_PORT", std::to_string(a.master_port)},
                          {"PET_NPROC_PER_NODE", std::to_string(cards > 0 ? cards : 1)}};
    for (const auto& [k, v] : launcher)
      if (!a.spec.env.count(k)) env[k] = v;
  }
  return env;
}

Env minimal_base_env(const std::function<std::optional<std::string>(const std::string&)>& getenv,
                     const std::optional<std::string>& user, const std::optional<std::string>& home) {
  Env env;
  for (const char* k : {"PATH", "HOME", "LANG", "LC_ALL", "USER", "LOGNAME", "SHELL", "TZ", "TMPDIR"})
    if (auto v = getenv(k)) env[k] = *v;
  if (!env.count("PATH")) env["PATH"] = "/usr/local/bin:/usr/bin:/bin";
  if (user) env["USER"] = env["LOGNAME"] = *user;
  if (home) env["HOME"] = *home;
  return env;
}

}  // namespace tessel::agent
