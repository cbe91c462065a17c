// Communicator: data-parallel collectives over torch's c10d.
// Rendezvous through c10d::TCPStore (rank 0 serves it at MASTER_ADDR:
// MASTER_PORT), collectives through c10d::ProcessGroupGloo. Tensors on an
// accelerator are staged through host memory because this LibTorch build
// has no NCCL (see backend_note()).
//
// Contracts: every rank calls the same collectives in the same order with
// tensors of the same shapes. One thread uses a Communicator at a time.
// With world_size 1 no store or process group is created and the
// collectives are no-ops.
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include <ATen/Tensor.h>

#include "dist_env.h"
#include "tessel/base/result.hpp"

namespace tessel::workers {

struct CommunicatorOptions {
  std::chrono::milliseconds timeout{std::chrono::minutes(5)};
  // Rank 0 only: called with the bound store port once it listens (useful
  // when DistEnv::master_port is 0, i.e. in-process tests).
  std::function<void(int port)> on_listening;
  size_t bucket_bytes = 25u << 20;  // gradient bucket size for allreduce
};

class Communicator {
 public:
  static Result<std::unique_ptr<Communicator>> connect(const DistEnv& env, const CommunicatorOptions& options);
  virtual ~Communicator() = default;

  virtual int rank() const = 0;
  virtual int world_size() const = 0;
  // One line describing the backend and why it was chosen.
  virtual std::string backend_note() const = 0;

  // Overwrites `tensors` on every rank with rank 0's values, one broadcast
  // per bucket of flattened tensors.
  virtual Status broadcast_from_rank0(const std::vector<at::Tensor>& tensors) = 0;

  // Replaces each tensor by its mean over ranks. Tensors are flattened into
  // buckets of about bucket_bytes; one allreduce per bucket, all buckets in
  // flight together.
  virtual Status allreduce_mean(const std::vector<at::Tensor>& tensors) = 0;
};

}  // namespace tessel::workers
