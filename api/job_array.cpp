// Job arrays: the JobSpec's `array` field, index lists (1,3,7-9, 0-30:10) and the
// ids of elements.
#include <algorithm>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "job_fields.hpp"

namespace tessel::api {

using nlohmann::json;

namespace {

// A whole number of 1 to 5 digits, or nullopt.
std::optional<int> array_index(std::string_view s) {
  if (s.empty() || s.size() > 5) return std::nullopt;
  int v = 0;
  for (char c : s) {
    if (c < '0' || c > '9') return std::nullopt;
    v = v * 10 + (c - '0');
  }
  return v;
}

}  // namespace

// `array`: {"count": N, "parallel": P} or {"indices": "1,3,7-9", "parallel": P} (a
// count beside indices must be theirs); the first problem, with its full field path.
std::optional<FieldError> read_array(const json& a, ArraySpec& out) {
  if (!a.is_object())
    return FieldError{"array", R"(array: must be an object {"count": N, "parallel": P} or {"indices": "1,3,7-9"})"};
  FieldReader r(a, "array");
  std::optional<int64_t> count, parallel;
  r.optional_int("count", count, 1, kMaxArrayCount);
  r.optional_string("indices", out.indices, kMaxArrayIndicesBytes);
  if (r.has("indices")) {
    auto indices = parse_array_indices(out.indices);
    if (!indices) {
      r.fail("indices", indices.error().message);
    } else if (count && *count != static_cast<int64_t>(indices->size())) {
      r.fail("count", "is " + std::to_string(*count) + " but indices lists " + std::to_string(indices->size()));
    } else {
      count = static_cast<int64_t>(indices->size());
    }
  } else if (!count) {
    r.fail("count", "is required (or indices)");
  }
  if (count) out.count = static_cast<int>(*count);
  r.optional_int("parallel", parallel, 1, kMaxArrayCount);
  out.parallel = parallel ? static_cast<int>(*parallel) : out.count;
  return r.finish_field();
}

Result<std::vector<int>> parse_array_indices(std::string_view text) {
  const std::string max = std::to_string(kMaxArrayCount - 1);
  if (text.empty()) return Error{"must list indices like 5-20 or 1,3,7-9"};
  if (text.size() > kMaxArrayIndicesBytes)
    return Error{"longer than " + std::to_string(kMaxArrayIndicesBytes) + " characters"};
  std::vector<bool> in(kMaxArrayCount, false);
  size_t pos = 0;
  for (;;) {
    const size_t comma = text.find(',', pos);
    const std::string_view item = text.substr(pos, comma == std::string_view::npos ? comma : comma - pos);
    const size_t dash = item.find('-'), colon = item.find(':');
    const auto first = array_index(item.substr(0, std::min(dash, colon)));
    std::optional<int> last = first, step = 1;
    if (dash != std::string_view::npos) {
      last = array_index(item.substr(dash + 1, colon == std::string_view::npos ? colon : colon - dash - 1));
      if (colon != std::string_view::npos) step = array_index(item.substr(colon + 1));
    } else if (colon != std::string_view::npos) {
      last.reset();  // A step needs a range.
    }
    if (!first || !last || !step || *step == 0)
      return Error{"'" + std::string(item.substr(0, 32)) + "' is not an index N, a range A-B or A-B:STEP"};
    if (*last >= kMaxArrayCount) return Error{"indices go up to " + max};
    if (*first > *last) return Error{"'" + std::string(item) + "' ends before it starts"};
    for (int i = *first; i <= *last; i += *step) in[static_cast<size_t>(i)] = true;
    if (comma == std::string_view::npos) break;
    pos = comma + 1;
  }
  std::vector<int> out;
  for (int i = 0; i < kMaxArrayCount; ++i)
    if (in[static_cast<size_t>(i)]) out.push_back(i);
  return out;
}

std::vector<int> array_indices(const ArraySpec& a) {
  if (!a.indices.empty()) {
    if (auto parsed = parse_array_indices(a.indices)) return std::move(*parsed);
  }
  std::vector<int> out(static_cast<size_t>(a.count));
  for (int i = 0; i < a.count; ++i) out[static_cast<size_t>(i)] = i;
  return out;
}

std::string array_element_id(const std::string& parent, int index) { return parent + "_" + std::to_string(index); }

std::optional<ElementId> split_element_id(std::string_view id) {
  const size_t us = id.find('_');
  if (us == std::string_view::npos || !is_job_id(id.substr(0, us))) return std::nullopt;
  const std::string_view digits = id.substr(us + 1);
  if (digits.empty() || digits.size() > 5 || (digits.size() > 1 && digits[0] == '0')) return std::nullopt;
  int index = 0;
  for (char c : digits) {
    if (c < '0' || c > '9') return std::nullopt;
    index = index * 10 + (c - '0');
  }
  if (index >= kMaxArrayCount) return std::nullopt;
  return ElementId{std::string(id.substr(0, us)), index};
}

}  // namespace tessel::api
