#pragma once
// hl-smi / nvidia-smi CSV output -> devices. Pure functions: the text and the field
// list the tool was asked for go in, devices (in index order) or an error come out.
// Nothing is guessed: a row that cannot be read fails the whole parse, naming the line.

#include <string>
#include <string_view>
#include <vector>

#include "tessel/agent/smi_dialect.hpp"
#include "tessel/api/inventory.hpp"
#include "tessel/base/result.hpp"

namespace tessel::agent::smi {

struct ParsedDevices {
  std::string driver_version;        // From the first row that has one; "" if none.
  std::vector<api::Device> devices;  // Sorted by index; all healthy (health is decided later).
};

// Accepts: a header row or none (header units in brackets, with or without nounits),
// values with units or without (old "Mib" too), N/A (-> nullopt telemetry, "" text),
// extra spaces, blank lines, CRLF. The index column is required, and module_id for
// hl-smi (nvidia-smi: module_id = index). Duplicate index or module_id is an error.
// Text cells must be printable ASCII no longer than the wire format allows (bus_id and
// name 64, serial, uuid and driver_version 128), so the result always serialises.
// An output with no rows gives no devices.
Result<ParsedDevices> parse_devices(const Dialect& dialect, std::string_view text,
                                    const std::vector<std::string>& requested);

// parse_devices with hl_smi_dialect() / nvidia_smi_dialect(), by default for the
// dialect's default query.
Result<ParsedDevices> parse_hl_smi(std::string_view text);
Result<ParsedDevices> parse_hl_smi(std::string_view text, const std::vector<std::string>& requested);
Result<ParsedDevices> parse_nvidia_smi(std::string_view text);
Result<ParsedDevices> parse_nvidia_smi(std::string_view text, const std::vector<std::string>& requested);

}  // namespace tessel::agent::smi
