#include "dist_env.h"

#include <charconv>
#include <cstdlib>

namespace tessel::workers {
namespace {

Result<int> parse_int(const EnvLookup& env, const char* name, int fallback, int lo, int hi) {
  auto raw = env(name);
  if (!raw) return fallback;
  int v = 0;
  auto [p, ec] = std::from_chars(raw->data(), raw->data() + raw->size(), v);
  if (ec != std::errc() || p != raw->data() + raw->size() || v < lo || v > hi)
    return Error::invalid(std::string(name) + "=" + *raw + " is not an integer in [" + std::to_string(lo) + ", " +
                              std::to_string(hi) + "]",
                          std::string("env.") + name);
  return v;
}

}  // namespace

EnvLookup process_env() {
  return [](const char* name) -> std::optional<std::string> {
    const char* v = std::getenv(name);
    if (v == nullptr || *v == '\0') return std::nullopt;
    return std::string(v);
  };
}

Result<DistEnv> dist_env_from(const EnvLookup& env) {
  DistEnv d;
  auto world = parse_int(env, "WORLD_SIZE", 1, 1, 1 << 20);
  if (!world) return world.error();
  auto rank = parse_int(env, "RANK", 0, 0, 1 << 20);
  if (!rank) return rank.error();
  auto local = parse_int(env, "LOCAL_RANK", *rank, 0, 1 << 20);
  if (!local) return local.error();
  auto port = parse_int(env, "MASTER_PORT", 29500, 0, 65535);
  if (!port) return port.error();
  d.world_size = *world;
  d.rank = *rank;
  d.local_rank = *local;
  d.master_port = *port;
  if (auto addr = env("MASTER_ADDR")) d.master_addr = *addr;
  if (d.rank >= d.world_size)
    return Error::invalid("RANK=" + std::to_string(d.rank) + " is not below WORLD_SIZE=" + std::to_string(d.world_size),
                          "env.RANK");
  if (d.world_size > 1 && d.master_port == 0)
    return Error::invalid("MASTER_PORT=0 needs an in-process rendezvous; set a real port", "env.MASTER_PORT");
  return d;
}

}  // namespace tessel::workers
