#include "tessel/cli/reservation_commands.hpp"

#include <charconv>

#include "tessel/api/job.hpp"
#include "tessel/cli/hostlist.hpp"
#include "tessel/cli/json_get.hpp"
#include "tessel/cli/table.hpp"

namespace tessel::cli {

using nlohmann::json;

namespace {

std::string reservation_path(const std::string& name) { return "/v1/reservations/" + url_encode(name); }

// RFC 3339 text as given, or whole unix seconds as a number.
Result<json> time_value(const std::string& text, const char* flag) {
  int64_t v = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (ec == std::errc() && end == text.data() + text.size() && v >= 0) return json(v);
  if (api::parse_rfc3339(text)) return json(text);
  return Error::invalid(
      std::string(flag) + ": expected an RFC 3339 time (2026-12-05T10:00:00Z) or unix seconds, got '" + text + "'",
      flag + 2);
}

std::string joined(const json& list) {
  std::string out;
  if (!list.is_array()) return "-";
  for (const auto& v : list)
    if (v.is_string()) out += (out.empty() ? "" : ",") + printable(v.get<std::string>());
  return out.empty() ? "-" : out;
}

// "users alice; projects vision", "maintenance", or "admins only".
std::string who_text(const json& r) {
  if (get_field(r, "maintenance") == json(true)) return "maintenance";
  std::string out;
  if (const std::string u = joined(get_field(r, "users")); u != "-") out += "users " + u;
  if (const std::string p = joined(get_field(r, "projects")); p != "-")
    out += (out.empty() ? "" : "; ") + ("projects " + p);
  return out.empty() ? "admins only" : out;
}

}  // namespace

Result<json> reservation_body(const ReservationOptions& o) {
  json body = {{"name", o.name}};
  if (!o.nodes.empty()) {
    auto nodes = expand_hostlists(o.nodes, "--nodes");
    if (!nodes) return nodes.error();
    body["nodes"] = std::move(*nodes);
  }
  if (o.count) body["count"] = *o.count;
  if (!o.selector.empty()) {
    json sel = json::object();
    for (const std::string& kv : o.selector) {
      const auto eq = kv.find('=');
      if (eq == std::string::npos || eq == 0)
        return Error::invalid("--selector: expected KEY=VALUE, got '" + kv + "'", "selector");
      sel[kv.substr(0, eq)] = kv.substr(eq + 1);
    }
    body["node_selector"] = sel;
  }
  if (!o.start.empty()) {
    auto t = time_value(o.start, "--start");
    if (!t) return t.error();
    body["start"] = *t;
  }
  auto t = time_value(o.end, "--end");
  if (!t) return t.error();
  body["end"] = *t;
  if (!o.users.empty()) body["users"] = o.users;
  if (!o.projects.empty()) body["projects"] = o.projects;
  if (o.maintenance) body["maintenance"] = true;
  return body;
}

std::string render_reservations(const json& list) {
  Table t({"NAME", "STATE", "START", "END", "NODES", "FOR"});
  if (list.is_array())
    for (const auto& r : list)
      t.add_row({printable(get_string(r, "name")), printable(get_string(r, "state")), printable(get_string(r, "start")),
                 printable(get_string(r, "end")), joined(get_field(r, "nodes")), who_text(r)});
  return t.render();
}

int cmd_reservation_create(Session& s, const ReservationOptions& o) {
  auto body = reservation_body(o);
  if (!body) return s.usage("reservation create", body.error());
  auto* c = s.client("reservation create");
  if (!c) return kExitUsage;
  auto r = c->post("/v1/reservations", *body);
  if (!r) return s.fail("reservation create", r.error().wrap(o.name));
  if (s.json_output())
    s.print_json(*r);
  else
    s.env().out << o.name << ": reserved " << joined(get_field(*r, "nodes")) << " from "
                << printable(get_string(*r, "start")) << " to " << printable(get_string(*r, "end")) << '\n';
  return kExitOk;
}

int cmd_reservation_list(Session& s) {
  auto* c = s.client("reservation list");
  if (!c) return kExitUsage;
  auto r = c->get("/v1/reservations");
  if (!r) return s.fail("reservation list", r.error());
  if (s.json_output()) {
    s.print_json(*r);
    return kExitOk;
  }
  const auto& list = get_field(*r, "reservations");
  if (!list.is_array()) return s.fail("reservation list", Error{"server answer has no \"reservations\" array"});
  s.env().out << render_reservations(list);
  return kExitOk;
}

int cmd_reservation_show(Session& s, const std::string& name) {
  auto* c = s.client("reservation show");
  if (!c) return kExitUsage;
  auto r = c->get(reservation_path(name));
  if (!r) return s.fail("reservation show", r.error().wrap(name));
  if (s.json_output()) {
    s.print_json(*r);
    return kExitOk;
  }
  auto& out = s.env().out;
  out << "Reservation: " << printable(get_string(*r, "name")) << '\n'
      << "State:       " << printable(get_string(*r, "state")) << '\n'
      << "Window:      " << printable(get_string(*r, "start")) << " to " << printable(get_string(*r, "end")) << '\n'
      << "Nodes:       " << joined(get_field(*r, "nodes")) << '\n'
      << "For:         " << who_text(*r) << '\n'
      << "Created by:  " << printable(get_string(*r, "created_by")) << '\n';
  return kExitOk;
}

int cmd_reservation_delete(Session& s, const std::string& name) {
  return s.delete_named("reservation delete", reservation_path(name), name, "deleted");
}

}  // namespace tessel::cli
