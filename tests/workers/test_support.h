// Helpers for the worker tests: the text fixture. Temp dirs and child processes
// come from the test kit (tests/support).
#pragma once

#include <filesystem>

#include "child_process.hpp"
#include "temp_dir.hpp"

namespace tessel::workers::testing {

using testkit::TempDir;

inline std::filesystem::path text_fixture() { return TESSEL_TEXT_FIXTURE; }

}  // namespace tessel::workers::testing
