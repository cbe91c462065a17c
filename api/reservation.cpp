#include "tessel/api/reservation.hpp"

#include <algorithm>

#include <nlohmann/json.hpp>

#include "tessel/api/job.hpp"
#include "tessel/api/json_fields.hpp"
#include "tessel/api/json_int.hpp"

namespace tessel::api {

using nlohmann::json;

namespace {

constexpr int64_t kMaxUnixSeconds = 253402300799;  // 9999-12-31T23:59:59Z.

// A time as RFC 3339 text or whole unix seconds, in ms; nullopt (with `why`) otherwise.
std::optional<int64_t> read_time(const json& v, std::string& why) {
  if (v.is_string()) {
    if (auto t = parse_rfc3339(v.get<std::string>())) return *t;
    why = "must be an RFC 3339 time (\"2026-12-05T10:00:00Z\") or unix seconds";
    return std::nullopt;
  }
  if (v.is_number_integer()) {
    const auto s = v.get<int64_t>();
    if (s >= 0 && s <= kMaxUnixSeconds) return s * 1000;
  }
  why = "must be an RFC 3339 time (\"2026-12-05T10:00:00Z\") or unix seconds";
  return std::nullopt;
}

// A list of distinct names, each passing `valid`; the first problem goes to `r`.
template <typename Valid>
void read_names(FieldReader& r, const json& j, const char* field, size_t max, Valid valid, const char* rule,
                std::vector<std::string>& out) {
  if (!r.has(field)) return;
  const json& list = j[field];
  if (!list.is_array()) return r.fail(field, "must be an array of names");
  if (list.size() > max) return r.fail(field, "names more than " + std::to_string(max));
  for (size_t i = 0; i < list.size(); ++i) {
    const std::string at = std::string(field) + "[" + std::to_string(i) + "]";
    if (!list[i].is_string() || !valid(list[i].get<std::string>())) return r.fail(at, std::string("must be ") + rule);
    const auto name = list[i].get<std::string>();
    if (std::find(out.begin(), out.end(), name) != out.end()) return r.fail(at, "lists " + name + " twice");
    out.push_back(name);
  }
}

bool is_user_name(const std::string& s) {
  return !s.empty() && s.size() <= 64 &&
         std::all_of(s.begin(), s.end(), [](char c) { return c > ' ' && c != 0x7f && c != '"' && c != '\\'; });
}

void read_window(FieldReader& r, const json& j, int64_t now_ms, Reservation& out) {
  std::string why;
  out.start_ms = now_ms;
  if (r.has("start")) {
    if (auto t = read_time(j["start"], why))
      out.start_ms = *t;
    else
      r.fail("start", why);
  }
  if (!r.has("end")) return r.fail("end", "is required");
  auto end = read_time(j["end"], why);
  if (!end) return r.fail("end", why);
  out.end_ms = *end;
  if (out.end_ms <= out.start_ms) r.fail("end", "must be after start");
}

}  // namespace

bool Reservation::allows(const std::string& user, const std::string& project) const {
  return std::find(users.begin(), users.end(), user) != users.end() ||
         std::find(projects.begin(), projects.end(), project) != projects.end();
}

Result<Reservation> parse_reservation_request(const json& j, int64_t now_ms) {
  if (!j.is_object()) return Error::invalid("body must be a JSON object");
  Reservation out;
  FieldReader r(j, "");
  r.required_string("name", out.name, 64);
  if (r.has("name") && !is_reservation_name(out.name))
    r.fail("name", "must be 1 to 64 letters, digits, '.', '_' or '-', starting with a letter or digit");
  read_names(r, j, "nodes", kMaxReservationNodes, is_node_name, "a node name", out.nodes);
  std::optional<int64_t> count;
  r.optional_int("count", count, 1, static_cast<int64_t>(kMaxReservationNodes));
  out.count = static_cast<int>(count.value_or(0));
  if (r.has("node_selector")) {
    auto selector = labels_from_json(j["node_selector"], "node_selector");
    if (!selector) {
      const std::string& f = selector.error().field;
      r.fail(f, selector.error().message.substr(f.size() + 2));
    } else {
      out.node_selector = std::move(*selector);
    }
  }
  if (r.has("nodes") && count) r.fail("nodes", "give nodes or count, not both");
  if (!r.has("nodes") && !count) r.fail("nodes", "give nodes (a list) or count (with an optional node_selector)");
  if (r.has("nodes") && out.nodes.empty()) r.fail("nodes", "must name at least one node");
  if (r.has("nodes") && !out.node_selector.empty()) r.fail("node_selector", "goes with count, not nodes");
  read_window(r, j, now_ms, out);
  read_names(r, j, "users", kMaxReservationMembers, is_user_name, "a user name", out.users);
  read_names(r, j, "projects", kMaxReservationMembers, is_project_name, "a project name", out.projects);
  r.optional_bool("maintenance", out.maintenance);
  if (out.maintenance && (!out.users.empty() || !out.projects.empty()))
    r.fail("maintenance", "a maintenance reservation admits no users or projects");
  if (auto e = r.finish_field()) return Error::invalid(e->message, e->field);
  std::sort(out.nodes.begin(), out.nodes.end());
  return out;
}

json to_json(const Reservation& r) {
  json j = {{"name", r.name},
            {"nodes", r.nodes},
            {"start", format_rfc3339(r.start_ms)},
            {"end", format_rfc3339(r.end_ms)},
            {"users", r.users},
            {"projects", r.projects},
            {"maintenance", r.maintenance}};
  if (r.count > 0) j["count"] = r.count;
  if (!r.node_selector.empty()) j["node_selector"] = r.node_selector;
  if (!r.created_by.empty()) j["created_by"] = r.created_by;
  if (r.created_at_ms > 0) j["created_at"] = format_rfc3339(r.created_at_ms);
  return j;
}

Result<Reservation> reservation_from_json(const json& j) {
  if (!j.is_object()) return Error::conflict("reservation record: not a JSON object");
  return read_json(Error::conflict("reservation record"), [&](JsonInts& ints) -> Result<Reservation> {
    Reservation r;
    r.name = j.at("name").get<std::string>();
    r.nodes = j.at("nodes").get<std::vector<std::string>>();
    auto start = parse_rfc3339(j.at("start").get<std::string>());
    auto end = parse_rfc3339(j.at("end").get<std::string>());
    if (!start || !end) return Error::conflict("reservation record " + r.name + ": bad start or end");
    r.start_ms = *start;
    r.end_ms = *end;
    r.users = j.value("users", std::vector<std::string>{});
    r.projects = j.value("projects", std::vector<std::string>{});
    r.maintenance = j.value("maintenance", false);
    if (j.contains("count")) r.count = ints.at<int>(j, "count");
    if (j.contains("node_selector")) {
      auto s = labels_from_json(j["node_selector"], "node_selector");
      if (!s) return s.error().wrap("reservation record " + r.name);
      r.node_selector = std::move(*s);
    }
    r.created_by = j.value("created_by", "");
    if (j.contains("created_at"))
      if (auto t = parse_rfc3339(j["created_at"].get<std::string>())) r.created_at_ms = *t;
    return r;
  });
}

}  // namespace tessel::api
