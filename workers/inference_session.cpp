#include "inference_session.h"
#include "torch_error.h"

#include "checkpoint.h"
#include "generate.h"
#include "throughput.h"

namespace tessel::workers {

struct InferenceSession::Impl {
  explicit Impl(const Clock& c) : clock(c) {}
  LoadedModel loaded;
  c10::Device device{c10::kCPU};
  const Clock& clock;
};

InferenceSession::InferenceSession(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
InferenceSession::~InferenceSession() = default;

Result<std::unique_ptr<InferenceSession>> InferenceSession::open(const std::filesystem::path& path,
                                                                 const DeviceRequest& request, const Clock& clock) {
  auto device = select_device(request);
  if (!device) return device.error();
  auto loaded = load_model(path, *device);
  if (!loaded) return loaded.error();
  auto impl = std::make_unique<Impl>(clock);
  impl->loaded = std::move(*loaded);
  impl->device = *device;
  impl->loaded.model->eval();
  return std::unique_ptr<InferenceSession>(new InferenceSession(std::move(impl)));
}

Result<Completion> InferenceSession::complete(const std::string& prompt, const SamplingParams& params) {
  if (prompt.empty()) return Error::invalid("prompt must not be empty", "prompt");
  if (auto s = validate(params); !s) return Error::invalid(field_message(s.error()), s.error().field);
  try {
    ThroughputMeter meter(impl_->clock);
    std::vector<uint8_t> tokens(prompt.begin(), prompt.end());
    auto out = generate_tokens(impl_->loaded.model, tokens, params, DecodeMode::kKvCache);
    const auto n = static_cast<int64_t>(out.size());
    return Completion{std::string(out.begin(), out.end()), n, meter.lap(static_cast<double>(n)).elapsed_s};
  } catch (const std::exception& e) {
    return Error{std::string("generating: ") + describe(e)};
  }
}

const ModelConfig& InferenceSession::config() const { return impl_->loaded.config; }
int64_t InferenceSession::step() const { return impl_->loaded.meta.step; }
std::string InferenceSession::device() const { return impl_->device.str(); }

}  // namespace tessel::workers
