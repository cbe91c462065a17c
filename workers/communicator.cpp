// The only translation unit that includes c10d; c10d signals failure with
// exceptions, which are turned into tessel::Errors here (a failed rendezvous,
// a peer not reachable, is `unavailable`; the rest `internal`).
#define USE_C10D_GLOO 1
#include "communicator.h"
#include "torch_error.h"

#include <torch/csrc/distributed/c10d/ProcessGroupGloo.hpp>
#include <torch/csrc/distributed/c10d/TCPStore.hpp>
#include <torch/csrc/utils/tensor_flatten.h>

namespace tessel::workers {
namespace {

class SingleProcess final : public Communicator {
 public:
  int rank() const override { return 0; }
  int world_size() const override { return 1; }
  std::string backend_note() const override { return "single process; no collectives"; }
  Status broadcast_from_rank0(const std::vector<at::Tensor>&) override { return ok_status(); }
  Status allreduce_mean(const std::vector<at::Tensor>&) override { return ok_status(); }
};

// Groups tensors (in order) into buckets of at most `limit` bytes; a tensor
// larger than the limit gets a bucket of its own. Buckets never mix dtypes.
std::vector<std::vector<at::Tensor>> make_buckets(const std::vector<at::Tensor>& tensors, size_t limit) {
  std::vector<std::vector<at::Tensor>> buckets;
  size_t bytes = 0;
  for (const auto& t : tensors) {
    const size_t n = t.numel() * t.element_size();
    if (buckets.empty() || bytes + n > limit || buckets.back().front().scalar_type() != t.scalar_type()) {
      buckets.emplace_back();
      bytes = 0;
    }
    buckets.back().push_back(t);
    bytes += n;
  }
  return buckets;
}

bool is_loopback(const std::string& host) { return host == "localhost" || host.rfind("127.", 0) == 0 || host == "::1"; }

class GlooCommunicator final : public Communicator {
 public:
  GlooCommunicator(c10::intrusive_ptr<c10d::Store> store, c10::intrusive_ptr<c10d::ProcessGroupGloo> pg,
                   const DistEnv& env, size_t bucket_bytes)
      : store_(std::move(store)), pg_(std::move(pg)), env_(env), bucket_bytes_(bucket_bytes) {}

  int rank() const override { return env_.rank; }
  int world_size() const override { return env_.world_size; }
  std::string backend_note() const override {
    return "gloo (c10d::ProcessGroupGloo, TCPStore at " + env_.master_addr + ":" + std::to_string(env_.master_port) +
           "); NCCL is not compiled into this LibTorch, "
           "so accelerator tensors are staged through host memory";
  }

  Status broadcast_from_rank0(const std::vector<at::Tensor>& tensors) override {
    return run_bucketed(
        tensors, "broadcast",
        [this](std::vector<at::Tensor>& flat) {
          c10d::BroadcastOptions opts;
          opts.rootRank = 0;
          return pg_->broadcast(flat, opts);
        },
        /*divide=*/false);
  }

  Status allreduce_mean(const std::vector<at::Tensor>& tensors) override {
    return run_bucketed(
        tensors, "allreduce",
        [this](std::vector<at::Tensor>& flat) { return pg_->allreduce(flat, c10d::AllreduceOptions{}); },
        /*divide=*/true);
  }

 private:
  template <typename Launch>
  Status run_bucketed(const std::vector<at::Tensor>& tensors, const char* what, Launch launch, bool divide) {
    try {
      at::NoGradGuard no_grad;  // parameters are autograd leaves
      auto buckets = make_buckets(tensors, bucket_bytes_);
      std::vector<std::vector<at::Tensor>> flats(buckets.size());
      std::vector<c10::intrusive_ptr<c10d::Work>> work;
      for (size_t i = 0; i < buckets.size(); ++i) {
        flats[i].push_back(torch::utils::flatten_dense_tensors(buckets[i]).to(at::kCPU).contiguous());
        work.push_back(launch(flats[i]));
      }
      for (size_t i = 0; i < buckets.size(); ++i) {
        work[i]->wait(std::chrono::duration_cast<std::chrono::milliseconds>(pg_->getOptions()->timeout));
        at::Tensor flat = flats[i][0];
        if (divide) flat.div_(env_.world_size);
        flat = flat.to(buckets[i].front().device());
        auto parts = torch::utils::unflatten_dense_tensors(flat, buckets[i]);
        for (size_t j = 0; j < parts.size(); ++j) buckets[i][j].copy_(parts[j]);
      }
      return ok_status();
    } catch (const std::exception& e) {
      return Error{std::string(what) + " over gloo (rank " + std::to_string(env_.rank) + "): " + describe(e)};
    }
  }

  c10::intrusive_ptr<c10d::Store> store_;
  c10::intrusive_ptr<c10d::ProcessGroupGloo> pg_;
  DistEnv env_;
  size_t bucket_bytes_;
};

}  // namespace

Result<std::unique_ptr<Communicator>> Communicator::connect(const DistEnv& env, const CommunicatorOptions& o) {
  if (env.world_size == 1) return std::unique_ptr<Communicator>(std::make_unique<SingleProcess>());
  DistEnv actual = env;
  try {
    c10d::TCPStoreOptions so;
    so.port = static_cast<uint16_t>(env.master_port);
    so.isServer = env.rank == 0;
    so.numWorkers = static_cast<size_t>(env.world_size);
    so.waitWorkers = false;  // the process group's rendezvous waits for everyone
    so.timeout = o.timeout;
    auto store = c10::make_intrusive<c10d::TCPStore>(env.master_addr, so);
    actual.master_port = store->getPort();
    if (env.rank == 0 && o.on_listening) o.on_listening(actual.master_port);

    auto pg_opts = c10d::ProcessGroupGloo::Options::create(o.timeout);
    if (const char* ifname = std::getenv("GLOO_SOCKET_IFNAME"); ifname && *ifname) {
      pg_opts->devices.push_back(c10d::ProcessGroupGloo::createDeviceForInterface(ifname));
    } else if (is_loopback(env.master_addr)) {
      pg_opts->devices.push_back(c10d::ProcessGroupGloo::createDeviceForHostname("127.0.0.1"));
    } else {
      pg_opts->devices.push_back(c10d::ProcessGroupGloo::createDefaultDevice());
    }
    pg_opts->threads = 2;
    auto pg = c10::make_intrusive<c10d::ProcessGroupGloo>(store, env.rank, env.world_size, pg_opts);
    return std::unique_ptr<Communicator>(
        std::make_unique<GlooCommunicator>(std::move(store), std::move(pg), actual, o.bucket_bytes));
  } catch (const std::exception& e) {
    return Error::unavailable("rendezvous with " + env.master_addr + ":" + std::to_string(env.master_port) +
                              " as rank " + std::to_string(env.rank) + "/" + std::to_string(env.world_size) + ": " +
                              describe(e));
  }
}

}  // namespace tessel::workers
