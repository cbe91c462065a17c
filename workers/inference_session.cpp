#include "inference_session.h"

#include <random>
#include <thread>
#include <vector>

#include "checkpoint.h"
#include "generate.h"
#include "throughput.h"
#include "torch_error.h"

namespace tessel::workers {
namespace {

// A request inside the batch loop: the same window policy as generate_tokens()
// (generate.h), so a batched request produces the tokens it would alone.
struct Sequence {
  std::shared_ptr<GenerationStream> stream;
  SamplingParams params;
  std::vector<uint8_t> tokens;  // prompt + generated
  size_t start = 0;             // window start
  int64_t produced = 0;
  std::mt19937_64 rng;
  KvCache cache;
  std::vector<float> logits;  // of the newest position: the next token comes from these
};

torch::Tensor window_tensor(const std::vector<uint8_t>& tokens, size_t start, torch::Device device) {
  std::vector<int64_t> ids(tokens.begin() + static_cast<std::ptrdiff_t>(start), tokens.end());
  return torch::tensor(ids, torch::kLong).view({1, -1}).to(device);
}

// Logits of the last position of row `b` of [B, T, V], as floats on the host.
std::vector<float> row_logits(const torch::Tensor& logits, int64_t b) {
  auto row = logits.select(0, b).select(0, logits.size(1) - 1).to(torch::kCPU, torch::kFloat).contiguous();
  return std::vector<float>(row.data_ptr<float>(), row.data_ptr<float>() + row.numel());
}

}  // namespace

std::optional<uint8_t> GenerationStream::next() {
  MutexLock lock(mutex_);
  ready_.wait(mutex_, [this]() REQUIRES(mutex_) { return !tokens_.empty() || finished_; });
  if (tokens_.empty()) return std::nullopt;
  uint8_t t = tokens_.front();
  tokens_.pop_front();
  return t;
}

std::optional<uint8_t> GenerationStream::try_next() {
  MutexLock lock(mutex_);
  if (tokens_.empty()) return std::nullopt;
  uint8_t t = tokens_.front();
  tokens_.pop_front();
  return t;
}

bool GenerationStream::done() const {
  MutexLock lock(mutex_);
  return finished_ && tokens_.empty();
}

void GenerationStream::set_listener(std::function<void()> fn) {
  MutexLock lock(mutex_);
  listener_ = fn ? std::make_shared<const std::function<void()>>(std::move(fn)) : nullptr;
}

void GenerationStream::cancel() {
  MutexLock lock(mutex_);
  cancelled_ = true;
}

bool GenerationStream::cancelled() const {
  MutexLock lock(mutex_);
  return cancelled_;
}

std::optional<Error> GenerationStream::error() const {
  MutexLock lock(mutex_);
  return error_;
}

void GenerationStream::push(uint8_t token) {
  std::shared_ptr<const std::function<void()>> listener;
  {
    MutexLock lock(mutex_);
    tokens_.push_back(token);
    listener = listener_;
  }
  ready_.notify_all();
  if (listener) (*listener)();
}

void GenerationStream::finish(std::optional<Error> error) {
  std::shared_ptr<const std::function<void()>> listener;
  {
    MutexLock lock(mutex_);
    finished_ = true;
    error_ = std::move(error);
    listener = listener_;
  }
  ready_.notify_all();
  if (listener) (*listener)();
}

struct InferenceSession::Impl {
  explicit Impl(const Clock& c) : clock(c) {}
  ~Impl() { stop_loop(); }

  void stop_loop() {
    {
      MutexLock lock(mutex);
      stopping = true;
    }
    wake.notify_all();
    if (loop.joinable()) loop.join();
  }

  // The decode loop: admit, then one step for every sequence in the batch.
  void run_loop() {
    c10::InferenceMode guard;
    std::vector<std::shared_ptr<Sequence>> batch;
    while (true) {
      std::vector<std::shared_ptr<Sequence>> joining;
      {
        MutexLock lock(mutex);
        wake.wait(mutex, [&]() REQUIRES(mutex) { return stopping || !waiting.empty() || !batch.empty(); });
        if (stopping) break;
        std::erase_if(waiting, [](const auto& s) {
          if (!s->stream->cancelled()) return false;
          s->stream->finish();
          return true;
        });
        const int64_t n = joiners(static_cast<int64_t>(batch.size()), static_cast<int64_t>(waiting.size()), limits);
        for (int64_t i = 0; i < n; ++i) {
          joining.push_back(std::move(waiting.front()));
          waiting.pop_front();
        }
        active = static_cast<int64_t>(batch.size() + joining.size());
      }
      try {
        step(batch, joining);
      } catch (const std::exception& e) {
        const Error err{std::string("generating: ") + describe(e)};
        for (auto& s : batch) s->stream->finish(err);
        for (auto& s : joining) s->stream->finish(err);
        batch.clear();
      }
      MutexLock lock(mutex);
      active = static_cast<int64_t>(batch.size());
      ++steps;
    }
    for (auto& s : batch) s->stream->finish(Error::unavailable("the server is stopping"));
    MutexLock lock(mutex);
    for (auto& s : waiting) s->stream->finish(Error::unavailable("the server is stopping"));
    waiting.clear();
  }

  void step(std::vector<std::shared_ptr<Sequence>>& batch, std::vector<std::shared_ptr<Sequence>>& joining) {
    Gpt& model = loaded.model;
    const auto context = static_cast<size_t>(model->config().context);
    // Joiners: the prompt's window in one forward each (prefill).
    for (auto& s : joining) {
      if (s->params.max_new_tokens == 0) {
        s->stream->finish();
        continue;
      }
      s->start = s->tokens.size() > context ? s->tokens.size() - context : 0;
      s->cache = model->empty_cache();
      s->logits = row_logits(model->forward_cached(window_tensor(s->tokens, s->start, device), s->cache), 0);
      batch.push_back(std::move(s));
    }
    // Each sequence chooses its token; those that go on need one more position.
    std::vector<std::shared_ptr<Sequence>> next;
    std::vector<int64_t> last_tokens;
    std::vector<KvCache*> caches;
    std::vector<std::shared_ptr<Sequence>> kept;
    for (auto& s : batch) {
      if (s->stream->cancelled()) {
        s->stream->finish();
        continue;
      }
      const auto token = static_cast<uint8_t>(choose_token(s->logits, s->params, s->rng));
      s->tokens.push_back(token);
      s->stream->push(token);
      if (++s->produced == s->params.max_new_tokens) {
        s->stream->finish();
        continue;
      }
      if (s->tokens.size() - s->start > context) {  // the window jumps: refill this cache alone
        s->start = s->tokens.size() - context / 2;
        s->cache = model->empty_cache();
        s->logits = row_logits(model->forward_cached(window_tensor(s->tokens, s->start, device), s->cache), 0);
      } else {
        next.push_back(s);
        last_tokens.push_back(token);
        caches.push_back(&s->cache);
      }
      kept.push_back(s);
    }
    batch = std::move(kept);
    if (next.empty()) return;
    auto tokens = torch::tensor(last_tokens, torch::kLong).view({-1, 1}).to(device);
    auto logits = model->forward_step(tokens, caches).to(torch::kCPU, torch::kFloat).contiguous();
    for (size_t b = 0; b < next.size(); ++b) next[b]->logits = row_logits(logits, static_cast<int64_t>(b));
  }

  LoadedModel loaded;
  c10::Device device{c10::kCPU};
  Precision precision = Precision::kFp32;
  const Clock& clock;

  BatchLimits limits;
  std::thread loop;
  mutable Mutex mutex;  // guards what follows
  CondVar wake;
  std::deque<std::shared_ptr<Sequence>> waiting GUARDED_BY(mutex);
  int64_t active GUARDED_BY(mutex) = 0;
  int64_t steps GUARDED_BY(mutex) = 0;
  bool stopping GUARDED_BY(mutex) = false;
};

InferenceSession::InferenceSession(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
InferenceSession::~InferenceSession() = default;

Result<std::unique_ptr<InferenceSession>> InferenceSession::open(const std::filesystem::path& path,
                                                                 const DeviceRequest& request, const Clock& clock) {
  auto device = select_device(request);
  if (!device) return device.error();
  auto precision = select_precision(request, *device);
  if (!precision) return precision.error();
  auto loaded = load_model(path, *device);  // fp32, as every checkpoint stores it
  if (!loaded) return loaded.error();
  auto impl = std::make_unique<Impl>(clock);
  impl->loaded = std::move(*loaded);
  impl->device = *device;
  impl->precision = *precision;
  impl->loaded.model->eval();
  if (*precision == Precision::kBf16) {
    try {
      impl->loaded.model->set_compute_dtype(torch::kBFloat16);
      impl->loaded.model->cast_product_weights();  // once, here: decoding reads bf16 weights
    } catch (const std::exception& e) {
      return Error{"casting the weights to bf16: " + describe(e)};
    }
  }
  return std::unique_ptr<InferenceSession>(new InferenceSession(std::move(impl)));
}

Result<Completion> InferenceSession::complete(const std::string& prompt, const SamplingParams& params,
                                              const std::function<bool(uint8_t)>& on_token) {
  if (prompt.empty()) return Error::invalid("prompt must not be empty", "prompt");
  if (auto s = validate(params); !s) return Error::invalid(field_message(s.error()), s.error().field);
  try {
    ThroughputMeter meter(impl_->clock);
    std::vector<uint8_t> tokens(prompt.begin(), prompt.end());
    auto out = generate_tokens(impl_->loaded.model, tokens, params, DecodeMode::kKvCache, on_token);
    const auto n = static_cast<int64_t>(out.size());
    return Completion{std::string(out.begin(), out.end()), n, meter.lap(static_cast<double>(n)).elapsed_s};
  } catch (const std::exception& e) {
    return Error{std::string("generating: ") + describe(e)};
  }
}

Status InferenceSession::start_batching(const BatchLimits& limits) {
  if (auto s = validate(limits); !s) return s;
  if (impl_->loop.joinable()) return Error{"batching already started", ErrorCode::conflict};
  impl_->limits = limits;
  impl_->loop = std::thread([impl = impl_.get()] { impl->run_loop(); });
  return ok_status();
}

void InferenceSession::stop_batching() { impl_->stop_loop(); }

Result<std::shared_ptr<GenerationStream>> InferenceSession::submit(const std::string& prompt,
                                                                   const SamplingParams& params) {
  if (prompt.empty()) return Error::invalid("must not be empty", "prompt");
  if (auto s = validate(params); !s) return s.error();
  auto seq = std::make_shared<Sequence>();
  seq->stream = std::make_shared<GenerationStream>();
  seq->params = params;
  seq->tokens.assign(prompt.begin(), prompt.end());
  seq->rng.seed(params.seed);
  {
    MutexLock lock(impl_->mutex);
    if (impl_->stopping) return Error::unavailable("the server is stopping");
    if (!queue_has_room(static_cast<int64_t>(impl_->waiting.size()), impl_->limits))
      return std::shared_ptr<GenerationStream>();
    impl_->waiting.push_back(seq);
  }
  impl_->wake.notify_all();
  return seq->stream;
}

InferenceSession::BatchStats InferenceSession::batch_stats() const {
  MutexLock lock(impl_->mutex);
  return {impl_->active, static_cast<int64_t>(impl_->waiting.size()), impl_->steps};
}

const BatchLimits& InferenceSession::batch_limits() const { return impl_->limits; }
const ModelConfig& InferenceSession::config() const { return impl_->loaded.config; }
int64_t InferenceSession::step() const { return impl_->loaded.meta.step; }
std::string InferenceSession::device() const { return impl_->device.str(); }
std::string InferenceSession::precision() const { return to_string(impl_->precision); }

}  // namespace tessel::workers
