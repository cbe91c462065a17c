// Helpers for the worker tests: the text fixture and a tiny model's training
// options. Temp dirs and child processes come from the test kit (tests/support).
#pragma once

#include <filesystem>

#include "child_process.hpp"
#include "temp_dir.hpp"
#include "train_options.h"

namespace tessel::workers::testing {

using testkit::TempDir;

inline std::filesystem::path text_fixture() { return TESSEL_TEXT_FIXTURE; }

// Training a 2-layer, dim-32 model on the text fixture into `out`: seconds on one
// thread, enough for the tests that need some trained checkpoint.
inline TrainOptions tiny_training(const std::filesystem::path& out, int steps) {
  TrainOptions o;
  o.data = text_fixture();
  o.out = out;
  o.steps = steps;
  o.batch_size = 8;
  o.model.layers = 2;
  o.model.heads = 2;
  o.model.dim = 32;
  o.model.context = 32;
  return o;
}

}  // namespace tessel::workers::testing
