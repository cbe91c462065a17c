#pragma once
// Printing CSV the way hl-smi / nvidia-smi do, from a fixture table. Used by the fake
// tools (tools/fake_smi) and by the parser's round-trip tests, so the fakes and the
// parser cannot drift apart silently. Pure.

#include <string>
#include <string_view>
#include <vector>

#include "tessel/agent/smi_dialect.hpp"
#include "tessel/agent/smi_table.hpp"
#include "tessel/base/result.hpp"

namespace tessel::agent::smi {

// The tools' -f / --format= value: "csv" plus optional "noheader" and "nounits".
struct Format {
  bool header = true;
  bool units = true;
};
Result<Format> parse_format(std::string_view spec);

// Reads a fixture: CSV with a header naming every field (any order, units in brackets
// allowed), values without units, N/A allowed.
Result<Table> read_fixture(const Dialect& dialect, std::string_view text);

// Prints `fields` of every fixture row, in the requested order, separated by ", ":
// a header first unless !fmt.header (units stay in its brackets even with nounits),
// values followed by " <unit>" when fmt.units (N/A printed as is). Errors when a field
// is unknown to the dialect or missing from the fixture.
Result<std::string> render_csv(const Dialect& dialect, const Table& fixture, const std::vector<std::string>& fields,
                               Format fmt);

}  // namespace tessel::agent::smi
