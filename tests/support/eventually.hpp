#pragma once
// Waiting in tests: poll a condition until it holds or a deadline passes (no test
// sleeps a fixed time to wait for an outcome).

#include <chrono>
#include <functional>

namespace tessel::testkit {

// Polls `pred` until it holds or `timeout` passes; returns its last result. Polls
// are 1 ms apart at first, then further (20 ms at most), so a long wait does not
// burn a core.
bool eventually(const std::function<bool()>& pred, std::chrono::milliseconds timeout = std::chrono::seconds(10));

}  // namespace tessel::testkit
