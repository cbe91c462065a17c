#include "tessel/agent/cnmon_inventory.hpp"

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "tessel/agent/cnmon_parse.hpp"
#include "tessel/agent/executable.hpp"
#include "tessel/agent/tool_run.hpp"

namespace tessel::agent {

namespace {

namespace fs = std::filesystem;

// env(1) from coreutils: `env -C DIR PROGRAM ARGS...` runs PROGRAM in DIR, without a shell.
constexpr const char* kEnv = "/usr/bin/env";
constexpr size_t kMaxFile = 4 << 20;  // As much as the runner keeps of a tool's stdout.

// A fresh directory only this process uses, removed with everything in it on destruction.
class PrivateDir {
 public:
  static Result<PrivateDir> make() {
    std::error_code ec;
    fs::path base = fs::temp_directory_path(ec);
    if (ec) base = "/tmp";
    std::string pattern = (base / "tessel-cnmon-XXXXXX").string();
    if (::mkdtemp(pattern.data()) == nullptr)
      return Error{"cnmon: cannot make a directory in " + base.string() + ": " + std::strerror(errno)};
    return PrivateDir(pattern);
  }
  PrivateDir(PrivateDir&& o) noexcept : path_(std::move(o.path_)) { o.path_.clear(); }
  PrivateDir(const PrivateDir&) = delete;
  PrivateDir& operator=(const PrivateDir&) = delete;
  PrivateDir& operator=(PrivateDir&&) = delete;
  ~PrivateDir() {
    std::error_code ec;
    if (!path_.empty()) fs::remove_all(path_, ec);
  }
  const fs::path& path() const { return path_; }

 private:
  explicit PrivateDir(fs::path p) : path_(std::move(p)) {}
  fs::path path_;
};

Result<std::string> read_info_file(const fs::path& file) {
  std::ifstream in(file, std::ios::binary);
  if (!in) return Error{std::string("cnmon wrote no ") + cambricon::kInfoFile};
  std::string text(kMaxFile + 1, '\0');
  in.read(text.data(), static_cast<std::streamsize>(text.size()));
  text.resize(static_cast<size_t>(in.gcount()));
  if (text.size() > kMaxFile) return Error{std::string("cnmon: ") + cambricon::kInfoFile + " is over 4 MiB"};
  return text;
}

class CnmonInventory final : public InventorySource {
 public:
  CnmonInventory(CommandRunner& runner, InventoryConfig config) : runner_(runner), config_(std::move(config)) {}

  Result<api::NodeInventory> read() override {
    auto exe = resolve_executable("cnmon", config_.cnmon, config_.path_env);
    if (!exe) return exe.error();
    auto dir = PrivateDir::make();
    if (!dir) return dir.error();
    std::vector<std::string> args = {"-C", dir->path().string(), exe->string()};
    const auto& info = cambricon::info_args();
    args.insert(args.end(), info.begin(), info.end());
    auto out = run_tool("cnmon", kEnv, args, runner_, config_);
    if (!out) return out.error();
    auto text = read_info_file(dir->path() / cambricon::kInfoFile);
    if (!text) return text.error();
    auto parsed = cambricon::parse_cnmon_info(*text);
    if (!parsed) return parsed.error();
    return to_inventory(api::Vendor::cambricon, std::move(*parsed));
  }

 private:
  CommandRunner& runner_;
  InventoryConfig config_;
};

}  // namespace

std::unique_ptr<InventorySource> make_cnmon_inventory(CommandRunner& runner, const InventoryConfig& config) {
  return std::make_unique<CnmonInventory>(runner, config);
}

}  // namespace tessel::agent
