#pragma once
// `tessel reservation create|list|show|delete`: nodes reserved for a window (issue 32,
// /v1/reservations; admins only). Each returns the process exit code (see app.hpp) and
// prints through the Session.

#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "tessel/base/result.hpp"
#include "tessel/cli/session.hpp"

namespace tessel::cli {

struct ReservationOptions {
  std::string name;
  std::vector<std::string> nodes;     // --nodes n1,n2 or n[1-2] (or --count).
  std::optional<int> count;           // --count N, with --selector.
  std::vector<std::string> selector;  // --selector KEY=VALUE, repeatable.
  std::string start, end;             // RFC 3339 or unix seconds; start empty: now.
  std::vector<std::string> users, projects;
  bool maintenance = false;
};

// The POST body; errors name the flag.
Result<nlohmann::json> reservation_body(const ReservationOptions& o);
// One row per reservation: NAME STATE START END NODES WHO.
std::string render_reservations(const nlohmann::json& list);

int cmd_reservation_create(Session& s, const ReservationOptions& o);
int cmd_reservation_list(Session& s);
int cmd_reservation_show(Session& s, const std::string& name);
int cmd_reservation_delete(Session& s, const std::string& name);

}  // namespace tessel::cli
