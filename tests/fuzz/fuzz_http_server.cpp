// libFuzzer: raw bytes sent to the real scheduler Service over loopback (in-memory
// store, fake clock): the HTTP/1.1 request parser and framing (tessel::http on
// Beast), routing, query and body parsing, and every route behind them. Each input
// is one connection: the bytes are sent, the write side is closed, and everything
// the server answers is read until it closes. The server must neither crash, nor
// answer anything that is not an HTTP response. Inputs that reach the agents' long
// poll are skipped (that route is meant to hold its answer, 30 s), and so are log
// reads: they are forwarded to a node's address, which an input could point outside
// this machine.
//
// The harness waits up to 10 s for each answer (the server's head and body timeouts
// are 2 s here), retrying a poll() that libFuzzer's own timer signal interrupted
// (EINTR): an earlier version took those interruptions for stalls of the server.
#include <chrono>
#include <csignal>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string_view>

#include "loopback_exchange.hpp"

#include "tessel/scheduler/service.hpp"
#include "tessel/scheduler/store.hpp"

namespace {

using namespace tessel::scheduler;

struct Target {
  Target() {
    std::signal(SIGPIPE, SIG_IGN);
    auto opened = open_sqlite_store(":memory:", SyncMode::normal);
    if (!opened) __builtin_trap();
    store = std::move(*opened);
    ServiceOptions o;
    o.port = 0;
    o.liveness_tick_ms = 0;
    o.io_threads = 1;
    o.limits.head_timeout = std::chrono::seconds(2);
    o.limits.body_timeout = std::chrono::seconds(2);
    service = std::make_unique<Service>(*store, clock, std::nullopt, o);
    if (!service->start().ok()) __builtin_trap();
  }
  tessel::FakeClock clock;
  std::unique_ptr<Store> store;
  std::unique_ptr<Service> service;
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static Target t;
  const std::string_view input(reinterpret_cast<const char*>(data), size);
  // Literal path segments are matched undecoded, so these spellings are the only ones
  // that reach the long poll and the log forwarder.
  if (input.find("ssignments") != std::string_view::npos || input.find("logs") != std::string_view::npos) return 0;
  tessel::fuzzing::exchange(t.service->port(), input, "fuzz_http_server");
  return 0;
}
