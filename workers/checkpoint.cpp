#include "checkpoint.h"
#include "torch_error.h"

#include <fcntl.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <regex>

#include <ATen/CPUGeneratorImpl.h>
#include <torch/serialize.h>

namespace tessel::workers {
namespace fs = std::filesystem;
namespace {

Status fsync_path(const fs::path& p, bool directory) {
  int fd = ::open(p.c_str(), directory ? O_RDONLY | O_DIRECTORY : O_RDONLY);
  if (fd < 0) return Error{"open " + p.string() + " for fsync: " + std::strerror(errno)};
  int rc = ::fsync(fd);
  ::close(fd);
  if (rc != 0) return Error{"fsync " + p.string() + ": " + std::strerror(errno)};
  return ok_status();
}

}  // namespace

std::optional<int64_t> checkpoint_step(const fs::path& p) {
  static const std::regex re(R"(ckpt-(\d{1,18})\.pt)");
  std::smatch m;
  const std::string name = p.filename().string();
  if (!std::regex_match(name, m, re)) return std::nullopt;
  return std::stoll(m[1].str());
}

namespace {

Result<fs::path> resolve(const fs::path& path) {
  std::error_code ec;
  if (!fs::is_directory(path, ec)) {
    if (!fs::exists(path, ec)) return Error::not_found(path.string() + " does not exist");
    return path;
  }
  auto newest = newest_checkpoint(path);
  if (!newest) return newest.error();
  if (!newest->has_value()) return Error::not_found("no checkpoint (ckpt-*.pt) in folder " + path.string());
  return **newest;
}

}  // namespace

fs::path checkpoint_path(const fs::path& dir, int64_t step) {
  char name[40];
  std::snprintf(name, sizeof name, "ckpt-%010lld.pt", static_cast<long long>(step));
  return dir / name;
}

Result<std::optional<fs::path>> newest_checkpoint(const fs::path& dir) {
  std::error_code ec;
  if (!fs::exists(dir, ec)) return std::optional<fs::path>{};
  std::optional<fs::path> best;
  int64_t best_step = -1;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    auto s = checkpoint_step(it->path());
    if (s && *s > best_step && it->is_regular_file()) {
      best_step = *s;
      best = it->path();
    }
  }
  if (ec) return Error{"listing " + dir.string() + ": " + ec.message()};
  return best;
}

Result<fs::path> save_checkpoint(const fs::path& dir, Gpt& model, torch::optim::Optimizer& optimizer,
                                 const CheckpointMeta& meta) {
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) return Error{"creating " + dir.string() + ": " + ec.message()};
  const fs::path final_path = checkpoint_path(dir, meta.step);
  const fs::path tmp = dir / ("." + final_path.filename().string() + ".tmp");
  try {
    torch::serialize::OutputArchive archive;
    archive.write("config", c10::IValue(to_json(model->config()).dump()));
    archive.write("step", c10::IValue(meta.step));
    archive.write("seed", c10::IValue(static_cast<int64_t>(meta.seed)));
    archive.write("train", c10::IValue(meta.train.dump()));
    archive.write("cpu_rng_state", at::detail::getDefaultCPUGenerator().get_state());
    torch::serialize::OutputArchive model_archive;
    model->save(model_archive);
    archive.write("model", model_archive);
    torch::serialize::OutputArchive optim_archive;
    optimizer.save(optim_archive);
    archive.write("optimizer", optim_archive);
    archive.save_to(tmp.string());
  } catch (const std::exception& e) {
    fs::remove(tmp, ec);
    return Error{"writing " + tmp.string() + ": " + describe(e)};
  }
  if (auto s = fsync_path(tmp, false); !s) return s.error();
  fs::rename(tmp, final_path, ec);
  if (ec) return Error{"renaming " + tmp.string() + " to " + final_path.string() + ": " + ec.message()};
  if (auto s = fsync_path(dir, true); !s) return s.error();
  return final_path;
}

Result<LoadedModel> load_model(const fs::path& path, torch::Device device) {
  auto file = resolve(path);
  if (!file) return file.error().wrap("loading checkpoint");
  try {
    torch::serialize::InputArchive archive;
    archive.load_from(file->string(), device);
    c10::IValue v;
    archive.read("config", v);
    auto config = model_config_from_json(nlohmann::json::parse(v.toStringRef()));
    if (!config) return config.error().wrap("loading " + file->string());
    LoadedModel out;
    out.config = *config;
    archive.read("step", v);
    out.meta.step = v.toInt();
    archive.read("seed", v);
    out.meta.seed = static_cast<uint64_t>(v.toInt());
    archive.read("train", v);
    out.meta.train = nlohmann::json::parse(v.toStringRef());
    out.model = Gpt(out.config, out.meta.seed);
    torch::serialize::InputArchive model_archive;
    archive.read("model", model_archive);
    out.model->load(model_archive);
    out.model->to(device);
    return out;
  } catch (const std::exception& e) {
    return Error{"loading " + file->string() + ": " + describe(e)};
  }
}

Status load_optimizer(const fs::path& file, torch::optim::Optimizer& optimizer, torch::Device device) {
  try {
    torch::serialize::InputArchive archive;
    archive.load_from(file.string(), device);
    torch::serialize::InputArchive optim_archive;
    archive.read("optimizer", optim_archive);
    optimizer.load(optim_archive);
    return ok_status();
  } catch (const std::exception& e) {
    return Error{"loading optimizer state from " + file.string() + ": " + describe(e)};
  }
}

}  // namespace tessel::workers
