// libFuzzer: the agent's per-task state files (assignment.json, launch.json,
// supervisor.json, result.json), which may be torn or edited on disk. The first
// byte picks the parser. Accepted text must re-serialize to an equal value.
#include <cstddef>
#include <cstdint>
#include <string>

#include "tessel/agent/task_files.hpp"

namespace {

template <typename Parse>
void check(const std::string& text, Parse parse) {
  auto r = parse(text);
  if (!r.ok()) return;
  auto again = parse(tessel::agent::serialize(*r));
  if (!again.ok() || !(*again == *r)) __builtin_trap();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 1) return 0;
  std::string text(reinterpret_cast<const char*>(data + 1), size - 1);
  namespace ag = tessel::agent;
  switch (data[0] % 4) {
    case 0: check(text, [](const std::string& t) { return ag::parse_assignment_file(t); }); break;
    case 1: check(text, [](const std::string& t) { return ag::parse_launch_plan(t); }); break;
    case 2: check(text, [](const std::string& t) { return ag::parse_supervisor_record(t); }); break;
    case 3: check(text, [](const std::string& t) { return ag::parse_task_result(t); }); break;
  }
  return 0;
}
