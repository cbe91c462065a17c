#pragma once
// Subcommands about nodes and capacity: nodes, node, inventory, drain, undrain,
// delete-node.
// Each returns the process exit code (see app.hpp) and prints through the Session.

#include <string>

#include "tessel/cli/session.hpp"

namespace tessel::cli {

// `wide`: also the DRIVER, FIRMWARE and PORTS columns.
int cmd_nodes(Session& s, bool wide = false);
int cmd_node(Session& s, const std::string& name);
int cmd_inventory(Session& s);
// `drain` true: POST /v1/nodes/NAME/drain; false: /undrain.
int cmd_drain(Session& s, const std::string& name, bool drain);
// DELETE /v1/nodes/NAME (admin): forgets a node that holds no cards.
int cmd_delete_node(Session& s, const std::string& name);

}  // namespace tessel::cli
