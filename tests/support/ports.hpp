#pragma once
// Loopback ports for tests that must name a port before a program binds it.

namespace tessel::testkit {

// A loopback port nothing listens on now (bound to port 0, then closed). Another
// process may take it before the caller does; programs that can bind port 0 and
// report it should. Throws std::runtime_error when no socket can be bound.
int free_port();

}  // namespace tessel::testkit
