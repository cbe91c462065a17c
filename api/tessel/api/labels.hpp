#pragma once
// Node labels (issue 32): KEY=VALUE pairs a node carries, from its agent
// (tessel-agent --label) and from admins (PUT /v1/nodes/{name}/labels), and the
// rules both follow, which are Kubernetes' (a job's node_selector names them too):
//  - a key is an optional prefix and '/' and a name: the name 1 to 63 of
//    [A-Za-z0-9._-], starting and ending with a letter or digit; the prefix a DNS
//    subdomain, 1 to 253 of [a-z0-9.-], starting and ending with a letter or digit;
//  - a value is empty, or 1 to 63 of [A-Za-z0-9._-] starting and ending with a
//    letter or digit;
//  - at most kMaxLabels labels on a node (agent's and admins' each) or in a selector.
// Pure functions of their arguments; any thread. Errors are invalid_argument and name
// the field they were given ("labels.rack").

#include <cstddef>
#include <map>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "tessel/base/result.hpp"

namespace tessel::api {

using Labels = std::map<std::string, std::string, std::less<>>;

inline constexpr size_t kMaxLabels = 64;
inline constexpr size_t kMaxLabelName = 63;
inline constexpr size_t kMaxLabelPrefix = 253;
inline constexpr size_t kMaxLabelValue = 63;

// "" when `key` (or `value`) is valid, else why not ("must be ...").
std::string label_key_error(std::string_view key);
std::string label_value_error(std::string_view value);

// "rack=r7" (a value may be empty: "gpu-test=") into its key and value; errors name `field`.
Result<std::pair<std::string, std::string>> parse_label(std::string_view text, const std::string& field);

// A JSON object of label keys to string values; errors name `field` or "<field>.<key>".
Result<Labels> labels_from_json(const nlohmann::json& j, const std::string& field);

// An admin's change of a node's labels, the body of PUT /v1/nodes/{name}/labels:
// {"labels": {"rack": "r7", "fabric": null}} sets rack and removes fabric (a key
// admins did not set is no error to remove); keys not named stay as they are.
struct LabelChange {
  Labels set;
  std::vector<std::string> remove;
};
Result<LabelChange> parse_label_change(const nlohmann::json& body);
// `labels` with `change` applied; an error (field "labels") past kMaxLabels.
Result<Labels> apply_label_change(Labels labels, const LabelChange& change);

// "rack=r7,fabric=ib" (in key order); "" for none.
std::string format_labels(const Labels& labels);

// The names nodes register with: 1 to 253 of [A-Za-z0-9._-].
bool is_node_name(std::string_view name);

}  // namespace tessel::api
