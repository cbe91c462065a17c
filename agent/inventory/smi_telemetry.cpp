#include "tessel/agent/smi_telemetry.hpp"

namespace tessel::agent::smi {

void merge_telemetry(const std::vector<Telemetry>& readings, std::vector<api::Device>& devices) {
  for (const Telemetry& t : readings) {
    for (api::Device& d : devices) {
      if (d.index != t.index) continue;
      d.utilization_pct = t.utilization_pct;
      d.temperature_c = t.temperature_c;
      d.power_w = t.power_w;
      d.memory_used_mib = t.memory_used_mib;
    }
  }
}

}  // namespace tessel::agent::smi
