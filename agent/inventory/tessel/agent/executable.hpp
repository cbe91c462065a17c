#pragma once
// Finding a vendor tool: by path, or by bare name in a PATH-style list.

#include <filesystem>
#include <string>

#include "tessel/base/result.hpp"

namespace tessel::agent {

// `name_or_path` containing '/' must be an executable regular file; a bare name is
// looked up in the colon-separated `path_env`. `label` names the tool in errors:
// "hl-smi not found at /opt/x/hl-smi", "hl-smi at /tmp/f is not executable",
// "hl-smi not found in PATH".
Result<std::filesystem::path> resolve_executable(const std::string& label, const std::string& name_or_path,
                                                 const std::string& path_env);

// The process's PATH ("" when unset).
std::string process_path_env();

}  // namespace tessel::agent
