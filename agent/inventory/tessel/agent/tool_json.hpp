// Readers shared by the parsers of vendor tools that print JSON (cnmon,
// mthreads-gmi): a bounded printable text field, a card index that a tool may print
// as a number or as a decimal string, and a tool's list of devices.
#pragma once

#include <cstddef>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "tessel/api/inventory.hpp"
#include "tessel/base/result.hpp"

namespace tessel::agent {

// Absent or null -> "". An error naming `where` on a non-string, or on a string that
// is not printable ASCII of at most `max_len` bytes.
Result<std::string> json_text(const nlohmann::json* v, const std::string& where, size_t max_len);

// 0..1023, as a JSON integer or a string of 1-4 decimal digits; else an error naming
// `where` (the field, e.g. "CnmonInfo[0].CardNum").
Result<int> json_card_index(const nlohmann::json* v, const std::string& where);

// A tool's device list (`list`, the value of its field `list_name`): every element
// read by `read`, which is given the element and its name ("cnmon CnmonInfo[2]"), in
// index order. Errors: not a list ("cnmon CnmonInfo: must be a list"), more than 64
// devices (what the inventory's wire format carries), the first element `read`
// refuses, or two devices of one index ("cnmon: duplicate CardNum 3", `index_field`
// naming the tool's field).
using JsonDeviceReader = std::function<Result<api::Device>(const nlohmann::json& element, const std::string& where)>;
Result<std::vector<api::Device>> json_device_list(const nlohmann::json& list, std::string_view tool,
                                                  std::string_view list_name, std::string_view index_field,
                                                  const JsonDeviceReader& read);

}  // namespace tessel::agent
