// InferenceSession: a trained Gpt loaded from a tessel-train checkpoint, with
// byte-level text in and out. Header free of LibTorch so the HTTP server and
// CLI do not pay for it.
//
// Not thread-safe: callers serialise complete() (the server holds a mutex).
#pragma once

#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>

#include "device.h"
#include "model_config.h"
#include "sampling.h"
#include "tessel/base/result.hpp"
#include "tessel/time/clock.hpp"

namespace tessel::workers {

struct Completion {
  std::string text;  // raw bytes; may be invalid UTF-8
  int64_t tokens = 0;
  double elapsed_s = 0;  // time spent decoding, on the session's clock
};

class InferenceSession {
 public:
  // `path`: a checkpoint file, or a folder meaning its newest checkpoint.
  // `clock` times each completion (Completion::elapsed_s); it must outlive
  // the session.
  static Result<std::unique_ptr<InferenceSession>> open(const std::filesystem::path& path, const DeviceRequest& device,
                                                        const Clock& clock = system_clock());
  ~InferenceSession();
  InferenceSession(const InferenceSession&) = delete;
  InferenceSession& operator=(const InferenceSession&) = delete;

  // Decodes with the key-value cache. `prompt` must be non-empty and
  // `params` valid (see validate(SamplingParams)); otherwise the error is
  // invalid_argument naming the field.
  Result<Completion> complete(const std::string& prompt, const SamplingParams& params);

  const ModelConfig& config() const;
  int64_t step() const;  // training steps behind the checkpoint
  std::string device() const;

 private:
  struct Impl;
  explicit InferenceSession(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace tessel::workers
