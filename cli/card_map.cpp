#include "tessel/cli/card_map.hpp"

#include <algorithm>
#include <map>
#include <set>

#include <nlohmann/json.hpp>

#include "tessel/cli/json_get.hpp"

namespace tessel::cli {

using nlohmann::json;

const char* const kCardMapLegend = "cards by module id: U in use, . free, X unhealthy, - absent";

std::string render_card_map(const json& devices) {
  if (!devices.is_array() || devices.empty()) return "[]";
  std::map<int, char> marks;
  int highest = 7;
  for (const auto& d : devices) {
    auto id = get_int(d, "module_id");
    if (!id || *id < 0 || *id > 255) continue;  // Nonsense from the server: skip, don't draw 2^31 marks.
    char m = '.';
    if (!get_bool(d, "healthy", true))
      m = 'X';
    else if (!get_field(d, "job").is_null())
      m = 'U';
    marks[static_cast<int>(*id)] = m;
    highest = std::max(highest, static_cast<int>(*id));
  }
  std::string out = "[";
  for (int i = 0; i <= highest; ++i) {
    auto it = marks.find(i);
    out += it == marks.end() ? '-' : it->second;
  }
  out += ']';
  return out;
}

std::string format_group(std::vector<int> ids) {
  std::sort(ids.begin(), ids.end());
  bool contiguous = ids.size() >= 3;
  for (size_t i = 1; i < ids.size() && contiguous; ++i) contiguous = ids[i] == ids[i - 1] + 1;
  if (contiguous) return "{" + std::to_string(ids.front()) + "-" + std::to_string(ids.back()) + "}";
  std::string out = "{";
  for (size_t i = 0; i < ids.size(); ++i) {
    if (i > 0) out += ',';
    out += std::to_string(ids[i]);
  }
  return out + "}";
}

std::string render_free_groups(const json& free_groups) {
  if (!free_groups.is_object()) return "-";
  // Sizes largest first.
  std::map<int, std::vector<std::set<int>>, std::greater<>> by_size;
  for (const auto& [key, groups] : free_groups.items()) {
    int size = 0;
    try {
      size = std::stoi(key);
    } catch (...) {
      continue;
    }
    if (!groups.is_array()) continue;
    for (const auto& g : groups) {
      if (!g.is_array()) continue;
      std::set<int> ids;
      for (const auto& m : g)
        if (m.is_number_integer()) ids.insert(m.get<int>());
      if (!ids.empty()) by_size[size].push_back(std::move(ids));
    }
  }
  std::vector<std::set<int>> shown;
  std::string out;
  for (auto& [size, groups] : by_size) {
    std::sort(groups.begin(), groups.end());
    std::string part;
    for (const auto& g : groups) {
      bool inside = std::any_of(shown.begin(), shown.end(), [&](const std::set<int>& big) {
        return std::includes(big.begin(), big.end(), g.begin(), g.end());
      });
      if (inside) continue;
      part += format_group(std::vector<int>(g.begin(), g.end()));
      shown.push_back(g);
    }
    if (part.empty()) continue;
    if (!out.empty()) out += ' ';
    out += std::to_string(size) + ":" + part;
  }
  return out.empty() ? "-" : out;
}

std::string render_free_group_counts(const json& counts) {
  if (!counts.is_object()) return "-";
  std::map<int, std::string> by_size;
  for (const auto& [key, n] : counts.items()) {
    try {
      by_size[std::stoi(key)] = n.is_number() ? n.dump() : "?";
    } catch (...) {
    }
  }
  std::string out;
  for (const auto& [size, n] : by_size) {
    if (!out.empty()) out += ' ';
    out += std::to_string(size) + ":" + n;
  }
  return out.empty() ? "-" : out;
}

}  // namespace tessel::cli
