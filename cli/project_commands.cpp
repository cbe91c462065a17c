#include "tessel/cli/project_commands.hpp"

#include <charconv>
#include <sstream>

#include <nlohmann/json.hpp>

#include "tessel/cli/json_get.hpp"
#include "tessel/cli/table.hpp"

namespace tessel::cli {

using nlohmann::json;

namespace {

std::string project_path(const std::string& name) { return "/v1/projects/" + url_encode(name); }

std::optional<int64_t> whole(std::string_view s) {
  int64_t v = 0;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || end != s.data() + s.size() || v < 0) return std::nullopt;
  return v;
}

std::string max_text(const json& q) {
  const auto& m = get_field(q, "max");
  return m.is_number_integer() ? std::to_string(m.get<int64_t>()) : "-";
}

// "HL-225 4/16, * 0/-": guaranteed/max per model.
std::string quotas_text(const json& p) {
  std::string out;
  const auto& qs = get_field(p, "quotas");
  if (!qs.is_object()) return "-";
  for (const auto& [model, q] : qs.items()) {
    if (!out.empty()) out += ", ";
    const auto& g = get_field(q, "guaranteed");
    out += model + " " + (g.is_number_integer() ? std::to_string(g.get<int64_t>()) : "0") + "/" + max_text(q);
  }
  return out.empty() ? "-" : out;
}

std::string fair_share_text(const json& p) {
  const auto& f = get_field(p, "fair_share");
  if (!f.is_number()) return "-";
  std::ostringstream os;
  os.precision(3);
  os << f.get<double>();
  return os.str();
}

std::string card_hours_text(const json& p) {
  const auto& u = get_field(p, "usage_card_seconds");
  if (!u.is_number()) return "-";
  std::ostringstream os;
  os.setf(std::ios::fixed);
  os.precision(1);
  os << u.get<double>() / 3600.0;
  return os.str();
}

// "12 active; per user at most 500 (project), in all 500000; arrays up to 10000".
std::string limits_text(const json& p) {
  const auto& lim = get_field(p, "limits");
  auto number = [&lim](const char* key) -> std::string {
    const auto& v = get_field(lim, key);
    if (!v.is_number_integer()) return "-";
    return v.get<int64_t>() == 0 ? "no limit" : std::to_string(v.get<int64_t>());
  };
  const auto& active = get_field(p, "active_jobs");
  const auto& own = get_field(p, "max_active_jobs_per_user");
  std::string text = (active.is_number_integer() ? std::to_string(active.get<int64_t>()) : "-") +
                     " jobs not yet ended; per user at most " + number("max_active_jobs_per_user");
  if (own.is_number_integer()) text += " (project: " + std::to_string(own.get<int64_t>()) + ")";
  return text + ", all users " + number("max_active_jobs") + "; arrays up to " + number("max_array_size");
}

}  // namespace

Result<std::pair<std::string, json>> parse_quota_flag(const std::string& text) {
  const auto eq = text.rfind('=');
  if (eq == std::string::npos || eq == 0)
    return Error::invalid("--quota: expected MODEL=MAX or MODEL=GUARANTEED:MAX, got '" + text + "'", "quota");
  const std::string model = text.substr(0, eq);
  const std::string value = text.substr(eq + 1);
  std::string g = "0", m = value;
  if (auto colon = value.find(':'); colon != std::string::npos) {
    g = value.substr(0, colon);
    m = value.substr(colon + 1);
  }
  auto guaranteed = whole(g);
  auto max = whole(m);
  if (!guaranteed || (!max && m != "none"))
    return Error::invalid("--quota: card counts must be whole numbers (MAX may be 'none'), got '" + text + "'",
                          "quota");
  return std::make_pair(model, json{{"guaranteed", *guaranteed}, {"max", max ? json(*max) : json(nullptr)}});
}

int cmd_project_list(Session& s) {
  auto* c = s.client("project list");
  if (!c) return kExitUsage;
  auto r = c->get("/v1/projects");
  if (!r) return s.fail("project list", r.error());
  if (s.json_output()) {
    s.print_json(*r);
    return kExitOk;
  }
  const auto& list = get_field(*r, "projects");
  if (!list.is_array()) return s.fail("project list", Error{"server answer has no \"projects\" array"});
  Table t({"NAME", "SHARES", "FAIR-SHARE", "CARD-HOURS", "QUOTAS (GUARANTEED/MAX)"});
  for (const auto& p : list) {
    const auto& shares = get_field(p, "shares");
    t.add_row({printable(get_string(p, "name")),
               shares.is_number_integer() ? std::to_string(shares.get<int64_t>()) : "-", fair_share_text(p),
               card_hours_text(p), quotas_text(p)});
  }
  s.env().out << t.render();
  return kExitOk;
}

int cmd_project_show(Session& s, const std::string& name) {
  auto* c = s.client("project show");
  if (!c) return kExitUsage;
  auto r = c->get(project_path(name));
  if (!r) return s.fail("project show", r.error().wrap(name));
  if (s.json_output()) {
    s.print_json(*r);
    return kExitOk;
  }
  auto& out = s.env().out;
  const auto& shares = get_field(*r, "shares");
  out << "Project:     " << printable(get_string(*r, "name")) << '\n'
      << "Shares:      " << (shares.is_number_integer() ? std::to_string(shares.get<int64_t>()) : "-") << '\n'
      << "Fair share:  " << fair_share_text(*r) << '\n'
      << "Card-hours:  " << card_hours_text(*r) << " (decayed)\n"
      << "Quotas:      " << quotas_text(*r) << " (guaranteed/max)\n"
      << "Limits:      " << limits_text(*r) << '\n';
  return kExitOk;
}

int cmd_project_write(Session& s, const ProjectOptions& o, bool create) {
  const std::string command = create ? "project create" : "project set";
  json body = {{"name", o.name}};
  if (o.shares) body["shares"] = *o.shares;
  json quotas = json::object();
  for (const auto& q : o.quotas) {
    auto parsed = parse_quota_flag(q);
    if (!parsed) return s.usage(command, parsed.error());
    quotas[parsed->first] = parsed->second;
  }
  if (!quotas.empty()) body["quotas"] = quotas;
  if (o.max_active_jobs_per_user) body["max_active_jobs_per_user"] = *o.max_active_jobs_per_user;
  auto* c = s.client(command);
  if (!c) return kExitUsage;
  auto r = create ? c->post("/v1/projects", body) : c->put(project_path(o.name), body);
  if (!r) return s.fail(command, r.error().wrap(o.name));
  if (s.json_output())
    s.print_json(*r);
  else
    s.env().out << o.name << ": " << (create ? "created" : "set") << '\n';
  return kExitOk;
}

int cmd_project_delete(Session& s, const std::string& name) {
  return s.delete_named("project delete", project_path(name), name, "deleted");
}

}  // namespace tessel::cli
