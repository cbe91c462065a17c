// libFuzzer target for the CLI's Slurm hostlist expansion (outside input: -w, -x and
// reservation --nodes). Checks: never crashes; an accepted text gives 1 to
// kMaxHostlistNames names, none empty and none holding ',', '[' or ']'; and those
// names joined by commas expand to themselves.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include "tessel/cli/hostlist.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  auto names = tessel::cli::expand_hostlist(text);
  if (!names) return 0;
  if (names->empty() || names->size() > tessel::cli::kMaxHostlistNames) std::abort();
  std::string joined;
  for (const std::string& n : *names) {
    if (n.empty() || n.find_first_of(",[]") != std::string::npos) std::abort();
    if (!joined.empty()) joined += ',';
    joined += n;
  }
  if (joined.size() > tessel::cli::kMaxHostlistChars) return 0;
  auto again = tessel::cli::expand_hostlist(joined);
  if (!again || *again != *names) std::abort();
  return 0;
}
