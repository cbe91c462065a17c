#pragma once
// `tessel-agent inventory [--vendor habana|nvidia|amd|auto] [--hl-smi PATH]
//   [--nvidia-smi PATH] [--amd-smi PATH] [--sysfs-root DIR] [--timeout S]`
// Prints the node inventory as JSON (api::to_json, 2-space indent) on stdout.
// Exit status: 0 ok; 1 the inventory could not be read (one line on stderr:
// "tessel-agent inventory: reading inventory: hl-smi exited 3: ..."); 2 usage error.

#include <iosfwd>

namespace tessel::agent {

// argv[0] is the subcommand name ("inventory"); the agent's main calls
// inventory_main(argc - 1, argv + 1).
int inventory_main(int argc, char** argv);
// Same, writing to the given streams (tests).
int inventory_main(int argc, char** argv, std::ostream& out, std::ostream& err);

}  // namespace tessel::agent
