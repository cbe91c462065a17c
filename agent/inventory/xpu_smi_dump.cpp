#include "tessel/agent/xpu_smi_dump.hpp"

#include <map>
#include <optional>

#include "tessel/agent/smi_text.hpp"

namespace tessel::agent::intel {

namespace {

constexpr size_t kMaxDevices = 64;  // What the inventory's wire format carries.

// Where each reading is in a row; nullopt when the header has no such column.
struct Columns {
  size_t device_id = 0;
  std::optional<size_t> utilization, power, temperature, memory_used;
};

bool starts_with(std::string_view s, std::string_view prefix) { return s.substr(0, prefix.size()) == prefix; }

std::optional<Columns> find_columns(const std::vector<std::string>& header) {
  Columns c;
  bool has_id = false;
  for (size_t i = 0; i < header.size(); ++i) {
    const std::string& h = header[i];
    if (h == "DeviceId") {
      c.device_id = i;
      has_id = true;
    } else if (h == "GPU Utilization (%)") {
      c.utilization = i;
    } else if (h == "GPU Power (W)") {
      c.power = i;
    } else if (starts_with(h, "GPU Core Temperature")) {
      c.temperature = i;
    } else if (h == "GPU Memory Used (MiB)") {
      c.memory_used = i;
    }
  }
  if (!has_id) return std::nullopt;
  return c;
}

// Reads the cell at `col` into `field`; N/A leaves `field` as it was.
Status read_value(const std::vector<std::string>& cells, std::optional<size_t> col, std::optional<int64_t>& field) {
  if (!col) return ok_status();
  auto v = smi::parse_quantity(cells[*col], "");
  if (!v) return v.error();
  if (*v) field = *v;
  return ok_status();
}

Status read_row(const std::vector<std::string>& cells, const Columns& c, std::map<int, smi::Telemetry>& out) {
  auto id = smi::parse_small_int(cells[c.device_id], 1023);
  if (!id) return Error{"DeviceId: " + id.error().message};
  if (!out.contains(*id) && out.size() == kMaxDevices)
    return Error{"more than " + std::to_string(kMaxDevices) + " devices"};
  smi::Telemetry& t = out[*id];
  t.index = *id;
  for (auto [col, field] : {std::pair{c.utilization, &t.utilization_pct}, std::pair{c.power, &t.power_w},
                            std::pair{c.temperature, &t.temperature_c}, std::pair{c.memory_used, &t.memory_used_mib}})
    if (Status st = read_value(cells, col, *field); !st) return st;
  return ok_status();
}

}  // namespace

const std::vector<std::string>& dump_args() {
  static const std::vector<std::string> args = {"dump", "-d", "-1", "-m", "0,1,3,18", "-n", "1"};
  return args;
}

Result<std::vector<smi::Telemetry>> parse_xpu_smi_dump(std::string_view text) {
  const auto lines = smi::split_lines(text);
  std::optional<Columns> columns;
  size_t width = 0;
  std::map<int, smi::Telemetry> readings;
  for (size_t n = 0; n < lines.size(); ++n) {
    if (smi::is_blank(lines[n])) continue;
    const std::vector<std::string> cells = smi::split_cells(lines[n]);
    if (!columns) {
      columns = find_columns(cells);
      width = cells.size();
      if (!columns) return Error{"xpu-smi dump: no header row with DeviceId, got " + smi::quote_line(lines[n])};
      continue;
    }
    const std::string where = "xpu-smi dump line " + std::to_string(n + 1) + ": ";
    if (cells.size() != width)
      return Error{where + std::to_string(cells.size()) + " cells, the header has " + std::to_string(width)};
    if (Status st = read_row(cells, *columns, readings); !st) return Error{where + st.error().message};
  }
  if (!columns) return Error{"xpu-smi dump: no header row with DeviceId"};
  std::vector<smi::Telemetry> out;
  out.reserve(readings.size());
  for (const auto& [index, t] : readings) out.push_back(t);
  return out;
}

}  // namespace tessel::agent::intel
