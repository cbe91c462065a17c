#include "tessel/cli/node_commands.hpp"

#include <algorithm>

#include <nlohmann/json.hpp>

#include "tessel/api/labels.hpp"
#include "tessel/cli/json_get.hpp"
#include "tessel/cli/node_view.hpp"

namespace tessel::cli {

using nlohmann::json;

namespace {
std::string node_path(const std::string& name) { return "/v1/nodes/" + url_encode(name); }
}  // namespace

int cmd_nodes(Session& s, bool wide) {
  auto* c = s.client("nodes");
  if (!c) return kExitUsage;
  auto r = c->get("/v1/nodes");
  if (!r) return s.fail("nodes", r.error());
  if (s.json_output()) {
    s.print_json(*r);
    return kExitOk;
  }
  const auto& nodes = get_field(*r, "nodes");
  if (!nodes.is_array()) return s.fail("nodes", Error{"server answer has no \"nodes\" array"});
  s.env().out << render_nodes_table(nodes, s.env().now_unix_ms(), wide);
  return kExitOk;
}

int cmd_node(Session& s, const std::string& name) {
  auto* c = s.client("node");
  if (!c) return kExitUsage;
  auto r = c->get(node_path(name));
  if (!r) return s.fail("node", r.error().wrap(name));
  if (s.json_output())
    s.print_json(*r);
  else
    s.env().out << render_node_detail(*r, s.env().now_unix_ms());
  return kExitOk;
}

int cmd_inventory(Session& s) {
  auto* c = s.client("inventory");
  if (!c) return kExitUsage;
  auto r = c->get("/v1/inventory");
  if (!r) return s.fail("inventory", r.error());
  if (s.json_output())
    s.print_json(*r);
  else
    s.env().out << render_inventory(*r);
  return kExitOk;
}

int cmd_drain(Session& s, const std::string& name, bool drain) {
  const std::string command = drain ? "drain" : "undrain";
  auto* c = s.client(command);
  if (!c) return kExitUsage;
  auto r = c->post(node_path(name) + "/" + command, json::object());
  if (!r) return s.fail(command, r.error().wrap(name));
  if (s.json_output()) {
    s.print_json(*r);
  } else {
    auto state = get_string(*r, "state");
    s.env().out << name << ": " << (state.empty() ? (drain ? "draining" : "ready") : state) << '\n';
  }
  return kExitOk;
}

Result<json> label_change_request(const std::vector<std::string>& args) {
  if (args.empty()) return Error::invalid("label: give KEY=VALUE to set or KEY- to remove", "label");
  json labels = json::object();
  for (const std::string& arg : args) {
    if (arg.find('=') == std::string::npos && !arg.empty() && arg.back() == '-') {
      const std::string key = arg.substr(0, arg.size() - 1);
      if (std::string why = api::label_key_error(key); !why.empty())
        return Error::invalid(why.insert(0, "label: key '" + key + "' "), "label");
      labels[key] = nullptr;
      continue;
    }
    auto label = api::parse_label(arg, "label");
    if (!label) return label.error();
    labels[label->first] = label->second;
  }
  return json{{"labels", std::move(labels)}};
}

int cmd_node_label(Session& s, const std::string& name, const std::vector<std::string>& args) {
  auto body = label_change_request(args);
  if (!body) return s.usage("node label", body.error());
  auto* c = s.client("node label");
  if (!c) return kExitUsage;
  auto r = c->put(node_path(name) + "/labels", *body);
  if (!r) return s.fail("node label", r.error().wrap(name));
  if (s.json_output()) {
    s.print_json(*r);
    return kExitOk;
  }
  std::string shown;
  const json labels = get_field(*r, "labels");
  if (labels.is_object())
    for (const auto& [k, v] : labels.items())
      if (v.is_string()) shown += (shown.empty() ? "" : ",") + k + "=" + v.get<std::string>();
  s.env().out << name << ": " << (shown.empty() ? "no labels" : shown) << '\n';
  return kExitOk;
}

int cmd_delete_node(Session& s, const std::string& name) {
  return s.delete_named("delete-node", node_path(name), name, "deleted (its agent registers it again unless stopped)");
}

int cmd_node_token_issue(Session& s, const std::string& name) {
  const std::string command = "nodes token issue";
  auto* c = s.client(command);
  if (!c) return kExitUsage;
  auto r = c->post(node_path(name) + "/token", json::object());
  if (!r) return s.fail(command, r.error().wrap(name));
  if (s.json_output()) {
    s.print_json(*r);
    return kExitOk;
  }
  const std::string token = get_string(*r, "token");
  if (token.empty()) return s.fail(command, Error{"server answer has no \"token\""});
  s.env().out << token << '\n';
  return kExitOk;
}

int cmd_node_token_revoke(Session& s, const std::string& name) {
  const std::string command = "nodes token revoke";
  auto* c = s.client(command);
  if (!c) return kExitUsage;
  auto r = c->del(node_path(name) + "/token");
  if (!r) return s.fail(command, r.error().wrap(name));
  if (s.json_output())
    s.print_json(*r);
  else
    s.env().out << name << ": token revoked\n";
  return kExitOk;
}

int cmd_node_token_list(Session& s) {
  const std::string command = "nodes token list";
  auto* c = s.client(command);
  if (!c) return kExitUsage;
  auto r = c->get("/v1/node-tokens");
  if (!r) return s.fail(command, r.error());
  if (s.json_output()) {
    s.print_json(*r);
    return kExitOk;
  }
  const auto& tokens = get_field(*r, "tokens");
  if (!tokens.is_array()) return s.fail(command, Error{"server answer has no \"tokens\" array"});
  if (tokens.empty()) {
    s.env().out << "No issued node tokens.\n";
    return kExitOk;
  }
  size_t width = 4;  // "NODE"
  for (const auto& t : tokens) width = std::max(width, get_string(t, "node").size());
  auto row = [&](const std::string& node, const std::string& issued) {
    s.env().out << node << std::string(width - node.size() + 2, ' ') << issued << '\n';
  };
  row("NODE", "ISSUED");
  for (const auto& t : tokens) row(get_string(t, "node"), get_string(t, "issued_at"));
  return kExitOk;
}

}  // namespace tessel::cli
