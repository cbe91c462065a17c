// testkit::PostgresServer: initdb + pg_ctl in a temp dir, as the postgres user when root.
#include "postgres_server.hpp"

#include <pwd.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <vector>

#include "child_process.hpp"
#include "ports.hpp"

namespace tessel::testkit {

namespace fs = std::filesystem;

namespace {

bool has_server_tools(const std::string& dir) {
  return !dir.empty() && ::access((dir + "/initdb").c_str(), X_OK) == 0 &&
         ::access((dir + "/pg_ctl").c_str(), X_OK) == 0 && ::access((dir + "/psql").c_str(), X_OK) == 0;
}

std::string read_file(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  std::string s = ss.str();
  return s.size() > 4000 ? s.substr(s.size() - 4000) : s;
}

}  // namespace

std::optional<std::string> PostgresServer::find_bindir() {
  // Debian's pg_config (libpq-dev) names the server's bindir; psql's /usr/bin wrappers
  // are not enough (initdb has none), so fall back to the versioned directories.
  for (const char* pg_config : {"/usr/bin/pg_config", "/usr/local/bin/pg_config"}) {
    if (::access(pg_config, X_OK) != 0) continue;
    auto r = run_process(command({pg_config, "--bindir"}), std::chrono::seconds(10));
    std::string dir = r.out;
    while (!dir.empty() && (dir.back() == '\n' || dir.back() == ' ')) dir.pop_back();
    if (r.exit_code == 0 && has_server_tools(dir)) return dir;
  }
  std::vector<std::pair<int, std::string>> found;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator("/usr/lib/postgresql", ec)) {
    const std::string bin = (e.path() / "bin").string();
    if (!has_server_tools(bin)) continue;
    try {
      found.emplace_back(std::stoi(e.path().filename().string()), bin);
    } catch (const std::exception&) {
    }
  }
  if (found.empty()) return std::nullopt;
  return std::max_element(found.begin(), found.end())->second;
}

std::string PostgresServer::skip_reason() {
  return "PostgreSQL server binaries (initdb, pg_ctl, psql) not found via pg_config --bindir or in "
         "/usr/lib/postgresql/*/bin: install postgresql-15 (scripts/setup.sh does)";
}

void PostgresServer::run_as_owner(std::vector<std::string> argv, const std::string& what) const {
  argv[0] = bindir_ + "/" + argv[0];
  if (::geteuid() == 0) argv.insert(argv.begin(), {"/usr/sbin/runuser", "-u", "postgres", "--"});
  auto r = run_process(command(argv), std::chrono::seconds(60));
  if (r.exit_code != 0)
    throw std::runtime_error(what + " failed (exit " + std::to_string(r.exit_code) + "): " + r.out + r.err +
                             "\nserver log:\n" + read_file(log_));
}

PostgresServer::PostgresServer(bool fsync) : dir_("tessel-pg") {
  auto bindir = find_bindir();
  if (!bindir) throw std::runtime_error(skip_reason());
  bindir_ = *bindir;
  data_ = dir_.str("data");
  log_ = dir_.str("server.log");
  if (::geteuid() == 0) {
    const passwd* pw = ::getpwnam("postgres");
    if (pw == nullptr) throw std::runtime_error("running as root, but there is no postgres user to run PostgreSQL as");
    if (::chown(dir_.str().c_str(), pw->pw_uid, pw->pw_gid) != 0)
      throw std::runtime_error("chown " + dir_.str() + " to postgres failed");
  }
  std::vector<std::string> init = {"initdb", "-D", data_, "-U", "tessel", "--auth=trust", "-E", "UTF8", "--no-locale"};
  if (!fsync) init.emplace_back("--no-sync");
  run_as_owner(init, "initdb");
  std::ofstream conf(data_ + "/postgresql.conf", std::ios::app);
  conf << "listen_addresses = '127.0.0.1'\nunix_socket_directories = '" << dir_.str() << "'\n"
       << "fsync = " << (fsync ? "on" : "off") << "\nmax_connections = 50\nshared_buffers = 16MB\n";
  conf.close();
  // A free port can be taken between choosing and binding it: try a few.
  for (int attempt = 0;; ++attempt) {
    port_ = free_port();
    try {
      start();
      return;
    } catch (const std::runtime_error&) {
      if (attempt == 4) throw;
    }
  }
}

PostgresServer::~PostgresServer() {
  if (!running_) return;
  try {
    run_as_owner({"pg_ctl", "-D", data_, "-m", "immediate", "-w", "stop"}, "pg_ctl stop");
  } catch (const std::exception&) {
    // The temp dir goes anyway; a stray server dies without its data dir.
  }
}

void PostgresServer::start() {
  run_as_owner({"pg_ctl", "-D", data_, "-l", log_, "-w", "-t", "60", "-o", "-p " + std::to_string(port_), "start"},
               "pg_ctl start");
  running_ = true;
}

void PostgresServer::stop() {
  run_as_owner({"pg_ctl", "-D", data_, "-m", "fast", "-w", "stop"}, "pg_ctl stop");
  running_ = false;
}

std::string PostgresServer::uri(const std::string& dbname) const {
  return "postgresql://tessel@127.0.0.1:" + std::to_string(port_) + "/" + dbname;
}

std::string PostgresServer::psql(const std::string& dbname, const std::string& sql) const {
  auto r = run_process(
      command({bindir_ + "/psql", "-X", "-q", "-t", "-A", "-v", "ON_ERROR_STOP=1", "-d", uri(dbname), "-c", sql}),
      std::chrono::seconds(60));
  if (r.exit_code != 0) throw std::runtime_error("psql -c '" + sql + "' failed: " + r.err);
  return r.out;
}

std::string PostgresServer::create_database(const std::string& name) {
  psql("postgres", "CREATE DATABASE " + name);
  return uri(name);
}

}  // namespace tessel::testkit
