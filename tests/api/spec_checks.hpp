#pragma once
// Helpers shared by the JobSpec parser's tests.

#include <gtest/gtest.h>

#include <string>

#include <nlohmann/json.hpp>

#include "tessel/api/job.hpp"

namespace tessel::api::testing {

// A valid spec (python3 train.py) with `extra`'s fields added or replaced.
inline nlohmann::json spec(const nlohmann::json& extra) {
  nlohmann::json j = {{"command", {"python3", "train.py"}}};
  j.update(extra);
  return j;
}

// The field parse_job_spec() names when it refuses `j` (a test failure when it accepts it).
inline std::string error_field(const nlohmann::json& j) {
  auto r = parse_job_spec(j);
  EXPECT_FALSE(r.ok()) << j.dump();
  return !r.ok() ? r.error().field : "<no error>";
}

}  // namespace tessel::api::testing
