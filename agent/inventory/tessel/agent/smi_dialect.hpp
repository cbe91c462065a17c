#pragma once
// What a vendor tool's CSV columns mean: the field names hl-smi / nvidia-smi accept,
// the unit each prints, and which Device member each fills. Constant data.

#include <string>
#include <string_view>
#include <vector>

#include "tessel/api/inventory.hpp"

namespace tessel::agent::smi {

// The Device member (or inventory attribute) a column fills.
enum class Role {
  index,
  module_id,
  bus_id,
  model,
  serial,
  uuid,
  driver_version,
  memory_total,
  memory_used,
  utilization,
  temperature,
  power,
};

struct Field {
  std::string name;  // As passed to the tool and printed in its header.
  std::string unit;  // Printed after values without nounits, and in header brackets; "" none.
  Role role;
};

struct Dialect {
  std::string tool;  // "hl-smi" or "nvidia-smi": used in messages.
  api::Vendor vendor;
  std::vector<Field> fields;               // Every field the parser understands.
  std::vector<std::string> default_query;  // What the inventory asks for, in this order.

  // nullptr when `name` is not a field of this tool.
  const Field* find(std::string_view name) const;
  // The field filling `role`, nullptr if the tool has none (nvidia-smi: module_id).
  const Field* field_for(Role role) const;
};

// hl-smi -Q index,module_id,bus_id,name,serial,uuid,driver_version,memory.total,
//           memory.used,utilization.aip,temperature.aip,power.draw
const Dialect& hl_smi_dialect();
// nvidia-smi --query-gpu=index,pci.bus_id,name,serial,uuid,driver_version,memory.total,
//            memory.used,utilization.gpu,temperature.gpu,power.draw
const Dialect& nvidia_smi_dialect();

// "a,b,c" from a field list, as the tools take it.
std::string join_fields(const std::vector<std::string>& fields);

}  // namespace tessel::agent::smi
