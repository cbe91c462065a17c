// libFuzzer: the agent <-> scheduler protocol messages, from either side
// (register/heartbeat requests the scheduler receives, responses and desired
// state the agent receives, task reports, assignments) and the Job the CLI
// reads. The first byte picks the parser, the rest is JSON. Whatever a parser
// accepts must survive a round trip through to_json unchanged.
#include <cstddef>
#include <cstdint>

#include <nlohmann/json.hpp>

#include "tessel/api/agent_protocol.hpp"
#include "tessel/api/job.hpp"

namespace {

using nlohmann::json;

// parse(to_json(x)) must succeed and serialize to the same JSON.
template <typename Parse>
void round_trip(const json& once, Parse parse) {
  auto again = parse(once);
  if (!again.ok()) __builtin_trap();
  if (tessel::api::to_json(*again) != once) __builtin_trap();
}

template <typename Parse>
void check(const json& j, Parse parse) {
  auto r = parse(j);
  if (r.ok()) round_trip(tessel::api::to_json(*r), parse);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 1) return 0;
  auto j = json::parse(data + 1, data + size, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) return 0;
  namespace api = tessel::api;
  switch (data[0] % 8) {
    case 0: check(j, [](const json& x) { return api::register_request_from_json(x); }); break;
    case 1: check(j, [](const json& x) { return api::register_response_from_json(x); }); break;
    case 2: check(j, [](const json& x) { return api::heartbeat_request_from_json(x); }); break;
    case 3: check(j, [](const json& x) { return api::heartbeat_response_from_json(x); }); break;
    case 4: check(j, [](const json& x) { return api::desired_state_from_json(x); }); break;
    case 5: check(j, [](const json& x) { return api::task_report_from_json(x); }); break;
    case 6: check(j, [](const json& x) { return api::assignment_from_json(x); }); break;
    case 7: check(j, [](const json& x) { return api::job_from_json(x); }); break;
  }
  return 0;
}
