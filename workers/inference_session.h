// InferenceSession: a trained Gpt loaded from a tessel-train checkpoint, with
// byte-level text in and out. Header free of LibTorch so the HTTP server and
// CLI do not pay for it.
//
// complete() is not thread-safe: callers serialise it. Continuous batching
// (start_batching(), then submit() from any thread) runs one decode loop
// thread that owns the model from then on; complete() must not be called
// after start_batching().
#pragma once

#include <cstdint>
#include <deque>
#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "batch_policy.h"
#include "device.h"
#include "model_config.h"
#include "sampling.h"
#include "tessel/base/result.hpp"
#include "tessel/sync/mutex.hpp"
#include "tessel/time/clock.hpp"

namespace tessel::workers {

struct Completion {
  std::string text;  // raw bytes; may be invalid UTF-8
  int64_t tokens = 0;
  double elapsed_s = 0;  // time spent decoding, on the session's clock
};

// One request decoded by the batch loop: the loop appends its tokens, a
// consumer takes them. Thread-safe.
class GenerationStream {
 public:
  // Waits for the next new token; nullopt once the request ended (error()
  // says whether it failed).
  std::optional<uint8_t> next();
  // Without waiting: the next token if one is there; nullopt otherwise (done()
  // then says whether the request ended).
  std::optional<uint8_t> try_next();
  // The request ended and every token was taken.
  bool done() const;
  // `fn` runs after each new token and when the request ends, on the decode
  // loop's thread and outside the stream's lock: keep it short (it delays the
  // step), e.g. post the work elsewhere. An empty `fn` removes the listener.
  void set_listener(std::function<void()> fn);
  // Ends the request: it leaves the batch before the next decoding step.
  void cancel();
  bool cancelled() const;
  std::optional<Error> error() const;

  // The decode loop's side.
  void push(uint8_t token);
  void finish(std::optional<Error> error = std::nullopt);

 private:
  mutable Mutex mutex_;  // guards what follows
  CondVar ready_;
  std::deque<uint8_t> tokens_ GUARDED_BY(mutex_);
  bool finished_ GUARDED_BY(mutex_) = false;
  bool cancelled_ GUARDED_BY(mutex_) = false;
  std::optional<Error> error_ GUARDED_BY(mutex_);
  std::shared_ptr<const std::function<void()>> listener_ GUARDED_BY(mutex_);
};

class InferenceSession {
 public:
  // `path`: a checkpoint file, or a folder meaning its newest checkpoint.
  // `device.precision` bf16 casts the weights of the matrix products to bf16
  // once, here (see gpt.h); an unknown precision, or bf16 where LibTorch cannot
  // run it, is an invalid_argument error naming --precision.
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
  // `on_token`, when set, sees each new byte as it is chosen; returning false
  // ends the completion there (that byte included).
  Result<Completion> complete(const std::string& prompt, const SamplingParams& params,
                              const std::function<bool(uint8_t)>& on_token = {});

  // Starts the decode loop of continuous batching (see batch_policy.h).
  // invalid_argument naming the limit when `limits` is not valid.
  Status start_batching(const BatchLimits& limits);
  // Ends the decode loop: every queued or running request ends with an
  // unavailable error, and later submits get one. Idempotent.
  void stop_batching();
  // Queues a request for the batch loop (start_batching() first). Invalid
  // prompt or params: invalid_argument naming the field. A full queue: a null
  // stream.
  Result<std::shared_ptr<GenerationStream>> submit(const std::string& prompt, const SamplingParams& params);
  struct BatchStats {
    int64_t active = 0;   // in the batch
    int64_t waiting = 0;  // queued
    int64_t steps = 0;    // batched decoding steps run
  };
  BatchStats batch_stats() const;
  const BatchLimits& batch_limits() const;

  const ModelConfig& config() const;
  int64_t step() const;  // training steps behind the checkpoint
  std::string device() const;
  std::string precision() const;  // "fp32" or "bf16"

 private:
  struct Impl;
  explicit InferenceSession(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace tessel::workers
