#pragma once
// Reservations (issue 32, part 4): nodes set aside for a window of time, for some
// users and projects (a team's demo) or for nobody (maintenance). The JSON form is
// the wire contract (POST/GET /v1/reservations, api/openapi.yaml) and what the store
// keeps. Pure: parsing and checks that need no cluster state; the scheduler checks
// the nodes against the fleet and other reservations.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "tessel/api/labels.hpp"
#include "tessel/base/result.hpp"

namespace tessel::api {

inline constexpr size_t kMaxReservationNodes = 1024;
inline constexpr size_t kMaxReservationMembers = 256;  // Users, and projects.

struct Reservation {
  std::string name;
  // The reserved nodes, ascending. A request names them or asks for `count` nodes
  // matching `node_selector`, which the scheduler picks at creation and stores here.
  std::vector<std::string> nodes;
  int count = 0;                     // As asked (0: the nodes were named).
  Labels node_selector;              // With count only.
  int64_t start_ms = 0, end_ms = 0;  // The window: [start, end).
  // Who may run jobs there (reservation: NAME): these users, and members of these
  // projects. Both empty: admins only.
  std::vector<std::string> users;
  std::vector<std::string> projects;
  bool maintenance = false;  // No job at all runs on the nodes during the window.
  std::string created_by;
  int64_t created_at_ms = 0;

  bool operator==(const Reservation&) const = default;
  bool covers(int64_t t) const { return start_ms <= t && t < end_ms; }
  bool overlaps(const Reservation& o) const { return start_ms < o.end_ms && o.start_ms < end_ms; }
  bool allows(const std::string& user, const std::string& project) const;
};

// Strict parse of a request body (POST /v1/reservations). `now_ms` stands for an
// absent "start". Times are RFC 3339 or whole unix seconds. Errors are
// invalid_argument naming the field: name, nodes (or nodes[i]), count, node_selector,
// start, end (end <= start), users, projects; both nodes and count, or neither, is
// an error naming `nodes`.
Result<Reservation> parse_reservation_request(const nlohmann::json& j, int64_t now_ms);
// The stored (and shown) form and its reader (nodes filled in).
nlohmann::json to_json(const Reservation& r);
Result<Reservation> reservation_from_json(const nlohmann::json& j);

}  // namespace tessel::api
