// Precision: the number format the workers compute in, from --precision
// auto|fp32|bf16. Pure (no LibTorch): the flag's parsing and its default;
// select_precision() (device.h) resolves it on a device and checks that
// LibTorch can run it there.
//
// bf16 means bf16 matrix products and attention scores (the model casts their
// inputs, see gpt.h) with fp32 weights kept by the trainer, fp32 layer norms,
// softmax and loss; fp32 means fp32 throughout. Errors name the flag.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "tessel/base/result.hpp"

namespace tessel::workers {

enum class Precision { kFp32, kBf16 };

// "fp32" or "bf16"; "auto" is nullopt (the device's default). Anything else:
// invalid_argument naming --precision.
Result<std::optional<Precision>> parse_precision(std::string_view text);
// "fp32" or "bf16".
std::string to_string(Precision precision);
// The default of --precision auto on a device of this type (c10's name: "cpu",
// "cuda", "hpu"): bf16 on Gaudi (hpu), as Intel's guidance trains and serves;
// fp32 elsewhere.
Precision default_precision(std::string_view device_type);

}  // namespace tessel::workers
