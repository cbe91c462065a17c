#include "tessel/agent/smi_parse.hpp"

#include <algorithm>
#include <cstdio>
#include <map>

#include "tessel/agent/smi_table.hpp"
#include "tessel/agent/smi_text.hpp"

namespace tessel::agent::smi {

namespace {

constexpr int kMaxIndex = 1023;  // Same bound as the wire format.

std::string row_error(const Dialect& d, const Row& row, const std::string& what) {
  return d.tool + " line " + std::to_string(row.line) + ": " + what + ": " + quote_line(row.text);
}

// Text cells: N/A becomes "". Only printable ASCII within the wire format's length
// limits is accepted, so the inventory always serialises and the scheduler accepts it.
Result<std::string> text_value(const std::string& cell, size_t max_len) {
  if (is_not_available(cell)) return std::string();
  if (cell.size() > max_len) return Error{"longer than " + std::to_string(max_len) + " characters"};
  for (char c : cell) {
    auto u = static_cast<unsigned char>(c);
    if (u < 0x20 || u > 0x7e) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "0x%02x", u);
      return Error{std::string("unexpected byte ") + buf};
    }
  }
  return cell;
}

Result<api::Device> read_device(const Dialect& d, const Table& t, const Row& row, std::string& driver_version) {
  api::Device dev;
  bool have_module = false;
  for (size_t c = 0; c < t.columns.size(); ++c) {
    const Field* f = d.find(t.columns[c]);
    if (!f) continue;  // A column the inventory does not use.
    const std::string& cell = row.cells[c];
    auto quantity = [&](std::optional<int64_t>& out) -> Status {
      auto q = parse_quantity(cell, f->unit);
      if (!q) return Error{row_error(d, row, f->name + ": " + q.error().message)};
      out = *q;
      return ok_status();
    };
    auto text = [&](std::string& out, size_t max_len) -> Status {
      auto t = text_value(cell, max_len);
      if (!t) return Error{row_error(d, row, f->name + ": " + t.error().message)};
      out = std::move(*t);
      return ok_status();
    };
    Status st = ok_status();
    switch (f->role) {
      case Role::index:
      case Role::module_id: {
        auto v = parse_small_int(cell, kMaxIndex);
        if (!v) return Error{row_error(d, row, f->name + ": " + v.error().message)};
        if (f->role == Role::index) {
          dev.index = *v;
        } else {
          dev.module_id = *v;
          have_module = true;
        }
        break;
      }
      case Role::bus_id: st = text(dev.bus_id, 64); break;
      case Role::model: st = text(dev.model, 64); break;
      case Role::serial: st = text(dev.serial, 128); break;
      case Role::uuid: st = text(dev.uuid, 128); break;
      case Role::driver_version: {
        std::string v;
        st = text(v, 128);
        if (driver_version.empty()) driver_version = v;
        break;
      }
      case Role::memory_total: st = quantity(dev.memory_total_mib); break;
      case Role::memory_used: st = quantity(dev.memory_used_mib); break;
      case Role::utilization: st = quantity(dev.utilization_pct); break;
      case Role::temperature: st = quantity(dev.temperature_c); break;
      case Role::power: st = quantity(dev.power_w); break;
    }
    if (!st) return st.error();
  }
  if (!have_module) dev.module_id = dev.index;  // nvidia-smi has no module id.
  return dev;
}

}  // namespace

Result<ParsedDevices> parse_devices(const Dialect& d, std::string_view text,
                                    const std::vector<std::string>& requested) {
  auto table = read_table(d, text, requested);
  if (!table) return table.error();
  for (Role needed : {Role::index, Role::module_id}) {
    const Field* f = d.field_for(needed);
    if (f && table->column_of(f->name) < 0) return Error{d.tool + ": output has no \"" + f->name + "\" column"};
  }
  ParsedDevices out;
  std::map<int, int> index_line, module_line;
  for (const Row& row : table->rows) {
    auto dev = read_device(d, *table, row, out.driver_version);
    if (!dev) return dev.error();
    if (auto [it, fresh] = index_line.emplace(dev->index, row.line); !fresh)
      return Error{row_error(
          d, row,
          "duplicate index " + std::to_string(dev->index) + " (also on line " + std::to_string(it->second) + ")")};
    if (auto [it, fresh] = module_line.emplace(dev->module_id, row.line); !fresh)
      return Error{row_error(d, row,
                             "duplicate module_id " + std::to_string(dev->module_id) + " (also on line " +
                                 std::to_string(it->second) + ")")};
    out.devices.push_back(std::move(*dev));
  }
  std::sort(out.devices.begin(), out.devices.end(),
            [](const api::Device& a, const api::Device& b) { return a.index < b.index; });
  return out;
}

Result<ParsedDevices> parse_hl_smi(std::string_view text) {
  return parse_devices(hl_smi_dialect(), text, hl_smi_dialect().default_query);
}
Result<ParsedDevices> parse_hl_smi(std::string_view text, const std::vector<std::string>& requested) {
  return parse_devices(hl_smi_dialect(), text, requested);
}
Result<ParsedDevices> parse_nvidia_smi(std::string_view text) {
  return parse_devices(nvidia_smi_dialect(), text, nvidia_smi_dialect().default_query);
}
Result<ParsedDevices> parse_nvidia_smi(std::string_view text, const std::vector<std::string>& requested) {
  return parse_devices(nvidia_smi_dialect(), text, requested);
}

}  // namespace tessel::agent::smi
