// libFuzzer: a reservation body as POST /v1/reservations receives it (issue 32), and the
// stored form of what it accepts: an accepted request has a name, a window that ends
// after it starts, and nodes or a count but not both; its stored JSON reads back.
#include <cstddef>
#include <cstdint>

#include <nlohmann/json.hpp>

#include "tessel/api/reservation.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  auto j = nlohmann::json::parse(data, data + size, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) return 0;
  constexpr int64_t kNow = 1'780'000'000'000;  // 2026-05-28, as the scheduler's clock.
  auto parsed = tessel::api::parse_reservation_request(j, kNow);
  if (!parsed) return 0;
  const tessel::api::Reservation& r = *parsed;
  if (r.name.empty() || r.end_ms <= r.start_ms) __builtin_trap();
  if (r.nodes.empty() == (r.count == 0)) __builtin_trap();
  if (r.nodes.size() > tessel::api::kMaxReservationNodes) __builtin_trap();
  auto stored = tessel::api::reservation_from_json(tessel::api::to_json(r));
  if (!stored || stored->name != r.name || stored->nodes != r.nodes) __builtin_trap();
  return 0;
}
