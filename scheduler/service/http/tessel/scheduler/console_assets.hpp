#pragma once
// The web console's files (console/ at the repository root), built into the
// binary: a build step turns each file into a byte array of a generated source,
// so the scheduler serves the console without reading a disk or a network.

#include <cstddef>
#include <span>
#include <string_view>

namespace tessel::scheduler {

struct ConsoleAsset {
  std::string_view name;          // File name under console/, e.g. "app.js".
  std::string_view content_type;  // From the name's extension.
  std::string_view etag;          // A strong validator: the start of the file's SHA-256, quoted.
  std::string_view body;
};

// Every file, sorted by name. Lives as long as the program.
std::span<const ConsoleAsset> console_assets();

}  // namespace tessel::scheduler
