// libFuzzer: a job submission body as POST /v1/jobs receives it.
#include <cstddef>
#include <cstdint>

#include <nlohmann/json.hpp>

#include "tessel/api/job.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  auto j = nlohmann::json::parse(data, data + size, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) return 0;
  auto parsed = tessel::api::parse_job_spec(j);
  if (parsed) {
    // What we accept must round-trip.
    auto again = tessel::api::parse_job_spec(tessel::api::to_json(*parsed));
    if (!again || !(*again == *parsed)) __builtin_trap();
  }
  return 0;
}
