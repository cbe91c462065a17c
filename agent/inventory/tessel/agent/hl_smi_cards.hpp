#pragma once
// What hl-smi tells about each card beyond its -Q query, merged into the devices
// `hl-smi -Q` read (matched by PCI bus id). Pure functions.
//
// Ports: `hl-smi -n link`, the link state of each card's NIC ports.
// The output is one block per card: a line naming the card by its PCI bus id (as
// hl-smi's card headers do, "[0] AIP (accel0) 0000:43:00.0"), then one line per port,
// "port  8:        UP" (any spacing; state UP or DOWN, any case). A block without
// a header line is accepted only when the output names no card at all (the
// per-card form, `-i <bus id>`); merge_ports() then gives it to a node's only card.

#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "tessel/api/inventory.hpp"
#include "tessel/base/result.hpp"

namespace tessel::agent::smi {

struct CardPorts {
  std::vector<int> up;    // Port numbers, ascending.
  std::vector<int> down;  // Ascending.
};

// Port blocks by bus id (lower case, as printed otherwise). The key "" holds the
// ports printed before any card header. Errors name the line: a line that is
// neither blank, a header nor a port line; a port listed twice for one card; a
// state other than UP or DOWN; a port number over 255.
Result<std::map<std::string, CardPorts>> parse_hl_smi_link(std::string_view text);

// Sets ports_total/ports_up/ports_down on each device whose bus id has a block.
// Devices without one keep no port state. Errors: ports of a card the inventory
// does not have, or header-less ports on a node with more than one card.
Status merge_ports(const std::map<std::string, CardPorts>& ports, std::vector<api::Device>& devices);

// Firmware: `hl-smi -L`, one block per card headed "[0] AIP (accel0) 0000:43:00.0",
// with "Firmware [SPI] Version : Preboot version hl-gaudi2-1.12.1-fw-46.0.5-sec-6 (...)".
// Returns the SPI (preboot) firmware version by bus id: the word of the value that
// holds "fw-", else the value up to " (". Cards without the line (older hl-smi) are
// left out; lines this parser does not know are ignored. Never fails: the listing is
// informational, and a version it cannot find is "unknown".
std::map<std::string, std::string> parse_hl_smi_firmware(std::string_view list_text);

}  // namespace tessel::agent::smi
