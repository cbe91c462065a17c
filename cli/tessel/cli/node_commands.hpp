#pragma once
// Subcommands about nodes and capacity: nodes, node, inventory, drain, undrain,
// delete-node, nodes token issue|revoke|list.
// Each returns the process exit code (see app.hpp) and prints through the Session.

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "tessel/base/result.hpp"

#include "tessel/cli/session.hpp"

namespace tessel::cli {

// `wide`: also the DRIVER, FIRMWARE and PORTS columns.
int cmd_nodes(Session& s, bool wide = false);
int cmd_node(Session& s, const std::string& name);
int cmd_inventory(Session& s);
// `drain` true: POST /v1/nodes/NAME/drain; false: /undrain.
int cmd_drain(Session& s, const std::string& name, bool drain);
// `tessel node label NAME rack=r7 fabric-` into the body of PUT /v1/nodes/NAME/labels:
// KEY=VALUE sets, KEY- removes (as kubectl label). Errors name the argument.
Result<nlohmann::json> label_change_request(const std::vector<std::string>& args);
// PUT /v1/nodes/NAME/labels (admin): prints the node's labels after the change.
int cmd_node_label(Session& s, const std::string& name, const std::vector<std::string>& args);
// DELETE /v1/nodes/NAME (admin): forgets a node that holds no cards.
int cmd_delete_node(Session& s, const std::string& name);
// POST /v1/nodes/NAME/token (admin): prints the new agent token alone on a line (it
// is shown once; issuing again rotates it).
int cmd_node_token_issue(Session& s, const std::string& name);
// DELETE /v1/nodes/NAME/token (admin).
int cmd_node_token_revoke(Session& s, const std::string& name);
// GET /v1/node-tokens (admin): a NODE ISSUED table of the nodes with an issued token.
int cmd_node_token_list(Session& s);

}  // namespace tessel::cli
