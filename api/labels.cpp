// Node labels' rules (tessel/api/labels.hpp).
#include "tessel/api/labels.hpp"
#include "tessel/api/reserved_labels.hpp"

#include <nlohmann/json.hpp>

namespace tessel::api {
namespace {

bool alnum(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9'); }
bool name_char(char c) { return alnum(c) || c == '.' || c == '_' || c == '-'; }

// 1 to `max` of [A-Za-z0-9._-], a letter or digit at both ends.
bool is_label_word(std::string_view s, size_t max) {
  if (s.empty() || s.size() > max || !alnum(s.front()) || !alnum(s.back())) return false;
  for (char c : s)
    if (!name_char(c)) return false;
  return true;
}

Error key_error(const std::string& field, const std::string& key, const std::string& why) {
  return Error::invalid(field + ": key \"" + key.substr(0, 80) + "\" " + why, field);
}

bool is_dns_subdomain(std::string_view s) {
  if (s.empty() || s.size() > kMaxLabelPrefix) return false;
  auto lower_alnum = [](char c) { return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9'); };
  if (!lower_alnum(s.front()) || !lower_alnum(s.back())) return false;
  for (char c : s)
    if (!lower_alnum(c) && c != '-' && c != '.') return false;
  return true;
}

}  // namespace

std::string label_key_error(std::string_view key) {
  const size_t slash = key.find('/');
  std::string_view name = key;
  if (slash != std::string_view::npos) {
    if (!is_dns_subdomain(key.substr(0, slash)))
      return "the prefix before '/' must be 1 to 253 of [a-z0-9.-], starting and ending with a letter or digit";
    name = key.substr(slash + 1);
  }
  if (!is_label_word(name, kMaxLabelName))
    return "must be 1 to 63 of [A-Za-z0-9._-], starting and ending with a letter or digit (with an optional "
           "DNS prefix and '/')";
  return "";
}

std::string label_value_error(std::string_view value) {
  if (value.empty() || is_label_word(value, kMaxLabelValue)) return "";
  return "must be empty or 1 to 63 of [A-Za-z0-9._-], starting and ending with a letter or digit";
}

Result<std::pair<std::string, std::string>> parse_label(std::string_view text, const std::string& field) {
  const size_t eq = text.find('=');
  if (eq == std::string_view::npos) return Error::invalid(field + ": must be KEY=VALUE", field);
  std::string key(text.substr(0, eq)), value(text.substr(eq + 1));
  if (std::string why = label_key_error(key); !why.empty())
    return Error::invalid(field + ": key \"" + key.substr(0, 80) + "\" " + why, field);
  if (std::string why = label_value_error(value); !why.empty())
    return Error::invalid(field + ": value of " + key + " " + why, field);
  return std::make_pair(std::move(key), std::move(value));
}

Result<Labels> labels_from_json(const nlohmann::json& j, const std::string& field) {
  if (!j.is_object()) return Error::invalid(field + ": must be an object of label keys to string values", field);
  if (j.size() > kMaxLabels)
    return Error::invalid(field + ": more than " + std::to_string(kMaxLabels) + " labels", field);
  Labels out;
  for (const auto& [key, value] : j.items()) {
    if (std::string why = label_key_error(key); !why.empty()) return key_error(field, key, why);
    std::string where = field;
    where.append(".").append(key);
    if (!value.is_string()) return Error::invalid(where + ": must be a string", where);
    const auto& v = value.get_ref<const std::string&>();
    if (std::string why = label_value_error(v); !why.empty()) return Error::invalid(why.insert(0, where + ": "), where);
    out.emplace(key, v);
  }
  return out;
}

Result<LabelChange> parse_label_change(const nlohmann::json& body) {
  if (!body.is_object()) return Error::invalid("body must be a JSON object {\"labels\": {...}}");
  for (const auto& [key, _] : body.items())
    if (key != "labels") return Error::invalid(key + ": unknown field", key);
  if (!body.contains("labels") || !body["labels"].is_object())
    return Error::invalid("labels: must be an object of label keys to string values or null", "labels");
  const nlohmann::json& labels = body["labels"];
  if (labels.size() > kMaxLabels)
    return Error::invalid("labels: more than " + std::to_string(kMaxLabels) + " labels", "labels");
  LabelChange change;
  nlohmann::json set = nlohmann::json::object();
  for (const auto& [key, value] : labels.items()) {
    if (!value.is_null()) {
      set[key] = value;
      continue;
    }
    if (std::string why = label_key_error(key); !why.empty())
      return Error::invalid("labels: key \"" + key.substr(0, 80) + "\" " + why, "labels");
    if (is_reserved_label(key))
      return Error::invalid("labels." + key + ": the tessel.io/ prefix is the scheduler's own", "labels." + key);
    change.remove.push_back(key);
  }
  auto parsed = labels_from_json(set, "labels");
  if (!parsed) return parsed.error();
  if (auto st = check_unreserved_labels(*parsed, "labels"); !st) return st.error();
  change.set = std::move(*parsed);
  return change;
}

Result<Labels> apply_label_change(Labels labels, const LabelChange& change) {
  for (const std::string& key : change.remove) labels.erase(key);
  for (const auto& [key, value] : change.set) labels[key] = value;
  if (labels.size() > kMaxLabels)
    return Error::invalid("labels: a node may have at most " + std::to_string(kMaxLabels) + " labels set by admins",
                          "labels");
  return labels;
}

std::string format_labels(const Labels& labels) {
  std::string out;
  for (const auto& [k, v] : labels) out.append(out.empty() ? "" : ",").append(k).append("=").append(v);
  return out;
}

bool is_node_name(std::string_view name) {
  if (name.empty() || name.size() > 253) return false;
  for (char c : name)
    if (!name_char(c)) return false;
  return true;
}

}  // namespace tessel::api
