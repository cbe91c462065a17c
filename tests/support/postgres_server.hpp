#pragma once
// A real PostgreSQL server for tests, from Debian's packages (postgresql-15, which
// scripts/setup.sh installs): initdb into a temp dir, then pg_ctl start on a free
// loopback port with its unix socket in that dir; stopped and removed on destruction.
// PostgreSQL refuses to run as root: as root, initdb and pg_ctl run as the `postgres`
// user through runuser, in a temp dir chowned to it.

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "temp_dir.hpp"

namespace tessel::testkit {

class PostgresServer {
 public:
  // The directory holding initdb and pg_ctl (`pg_config --bindir`, else the newest
  // /usr/lib/postgresql/*/bin that has them), or nullopt: tests then GTEST_SKIP with
  // skip_reason().
  static std::optional<std::string> find_bindir();
  static std::string skip_reason();

  // initdb and start; throws std::runtime_error (with the server's log) on failure.
  // `fsync` off makes a test server faster where durability across a power loss is
  // not what the test is about.
  explicit PostgresServer(bool fsync = true);
  ~PostgresServer();
  PostgresServer(const PostgresServer&) = delete;
  PostgresServer& operator=(const PostgresServer&) = delete;

  int port() const { return port_; }
  // A new, empty database NAME (letters, digits, _); its URI.
  std::string create_database(const std::string& name);
  // postgresql://tessel@127.0.0.1:PORT/DBNAME
  std::string uri(const std::string& dbname) const;

  // pg_ctl stop -m fast / start on the same port and data: a database restart.
  void stop();
  void start();
  // Runs SQL on `dbname` with psql; its output (tuples only, unaligned). Throws on failure.
  std::string psql(const std::string& dbname, const std::string& sql) const;

 private:
  // Runs `argv` from the bindir, as the postgres user when this process is root.
  void run_as_owner(std::vector<std::string> argv, const std::string& what) const;
  std::string bindir_;
  TempDir dir_;
  std::string data_, log_;
  int port_ = 0;
  bool running_ = false;
};

}  // namespace tessel::testkit
