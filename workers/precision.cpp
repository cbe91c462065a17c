#include "precision.h"

namespace tessel::workers {

Result<std::optional<Precision>> parse_precision(std::string_view text) {
  if (text == "auto") return std::optional<Precision>{};
  if (text == "fp32") return std::optional<Precision>{Precision::kFp32};
  if (text == "bf16") return std::optional<Precision>{Precision::kBf16};
  return Error::invalid("--precision must be auto, fp32 or bf16, got '" + std::string(text) + "'", "precision");
}

std::string to_string(Precision precision) { return precision == Precision::kBf16 ? "bf16" : "fp32"; }

Precision default_precision(std::string_view device_type) {
  return device_type == "hpu" ? Precision::kBf16 : Precision::kFp32;
}

}  // namespace tessel::workers
