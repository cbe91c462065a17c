#pragma once
// Open-file limits for servers that hold many connections (the scheduler's REST API,
// the agent's log server). Every connection is a descriptor, and the usual soft limit
// of 1,024 (systemd's default for services too) stops accept() long before the
// server's own cap: a client past the limit waits in the listen backlog instead of
// getting its 503 at once.

#include <cstddef>
#include <cstdint>
#include <string_view>

namespace tessel::http {

// Raises the soft RLIMIT_NOFILE to the hard one (as nginx's worker_rlimit_nofile and
// Go's runtime do; at most 2^20) and returns the soft limit now in force.
uint64_t raise_fd_limit();

// The connection cap that fits `fd_limit` when each connection holds
// `fds_per_connection` descriptors and 256 stay for everything else (databases, log
// files, listening sockets). `configured` is kept when it fits. When it does not, an
// explicit flag (`flag` names it) is kept with a warning to raise LimitNOFILE, and a
// default is lowered to what fits, said at info level.
size_t connection_cap(uint64_t fd_limit, size_t configured, size_t fds_per_connection, bool explicit_flag,
                      std::string_view flag);

}  // namespace tessel::http
