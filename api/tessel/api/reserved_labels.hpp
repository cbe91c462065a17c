#pragma once
// Labels the scheduler gives nodes itself (issue 29), under the prefix tessel.io/, which
// nodes' agents (--label) and admins (PUT /v1/nodes/{name}/labels) may not set:
//  - tessel.io/images=true on a node whose agent runs jobs' images (its inventory
//    names a container runtime). A job with an `image` gets it in its node_selector at
//    submission, as a Kubernetes RuntimeClass adds its nodeSelector to a pod, so it is
//    placed only where it can run, and its reason says why when no node can.
// Pure; any thread.

#include <string>
#include <string_view>

#include "tessel/api/labels.hpp"
#include "tessel/base/result.hpp"

namespace tessel::api {

inline constexpr std::string_view kReservedLabelPrefix = "tessel.io/";
inline constexpr std::string_view kImagesLabel = "tessel.io/images";

inline bool is_reserved_label(std::string_view key) {
  return key.substr(0, kReservedLabelPrefix.size()) == kReservedLabelPrefix;
}

// A 400 naming "<field>.<key>" for the first reserved key among a node's `labels`.
inline Status check_unreserved_labels(const Labels& labels, const std::string& field) {
  for (const auto& [key, value] : labels) {
    if (!is_reserved_label(key)) continue;
    std::string named = field;
    named += '.';
    named += key;
    return Error::invalid(named + ": the tessel.io/ prefix is the scheduler's own", named);
  }
  return ok_status();
}

}  // namespace tessel::api
